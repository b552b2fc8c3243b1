//! `hooklog serve`'s flags for notices of waiting agents: where they go (`--notify`, repeated)
//! and the address their links name (`--public-url`). See docs/notify.md.

use crate::config::{Notify, NotifyTarget};
use anyhow::bail;
use clap::Args;

#[derive(Args, Debug, Default)]
pub struct NotifyArgs {
    /// POST a notice here when a session starts waiting for its user (docs/notify.md):
    /// `URL` takes hooklog's JSON, `ntfy:URL` an ntfy message, `slack:URL` a Slack incoming
    /// webhook's text. Repeat for more targets. The URL is a secret: never logged nor stored.
    #[arg(
        long = "notify",
        env = "HOOKLOG_NOTIFY",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub notify: Vec<String>,
    /// The address people open hooklog at, for the session links in notices (default:
    /// `http://<bound address>`).
    #[arg(long, env = "HOOKLOG_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
}

impl NotifyArgs {
    /// Where notices go, or why these flags cannot start a server.
    pub fn notify(&self) -> anyhow::Result<Notify> {
        let targets = self
            .notify
            .iter()
            .map(|given| NotifyTarget::parse(given).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let public_url = match self.public_url.as_deref().map(str::trim) {
            None => None,
            Some(url) => match reqwest::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {
                    Some(url.trim_end_matches('/').to_string())
                }
                _ => bail!("--public-url {url:?} is not an http(s) URL"),
            },
        };
        Ok(Notify {
            targets,
            public_url,
            ..Notify::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_target_is_refused_without_echoing_it() {
        let args = NotifyArgs {
            notify: vec!["http://127.0.0.1:9/in".into(), "slack:sekrit".into()],
            public_url: None,
        };
        let error = args.notify().unwrap_err().to_string();
        assert!(
            error.contains("slack") && !error.contains("sekrit"),
            "{error}"
        );
        let args = NotifyArgs {
            notify: vec!["ntfy:http://127.0.0.1:9/topic".into()],
            public_url: Some("https://hooklog.example/".into()),
        };
        let notify = args.notify().unwrap();
        assert_eq!(notify.targets.len(), 1);
        assert_eq!(
            notify.public_url.as_deref(),
            Some("https://hooklog.example")
        );
    }

    #[test]
    fn notify_targets_take_a_kind_prefix_and_never_echo_the_url() {
        use crate::config::NotifyKind;
        let parse = |s: &str| NotifyTarget::parse(s).map(|t| (t.kind, t.host()));
        assert_eq!(
            parse("http://127.0.0.1:9/in"),
            Ok((NotifyKind::Json, "127.0.0.1".into()))
        );
        assert_eq!(
            parse("ntfy:http://ntfy.lan/topic"),
            Ok((NotifyKind::Ntfy, "ntfy.lan".into()))
        );
        assert_eq!(
            parse("slack:http://relay.lan:8080/services/T/B/x"),
            Ok((NotifyKind::Slack, "relay.lan".into()))
        );
        let https = parse("slack:https://hooks.slack.com/services/T/B/sekrit").unwrap_err();
        assert!(
            https.contains("without TLS") && !https.contains("sekrit"),
            "{https}"
        );
        for bad in [
            "slack:hooks.slack.com/services/T/B/sekrit",
            "ftp://x/sekrit",
            "sekrit",
        ] {
            let error = parse(bad).unwrap_err();
            assert!(!error.contains("sekrit"), "{error}");
        }
    }
}
