//! `hooklog serve`'s flags for notices of waiting agents: where they go (`--notify`, repeated),
//! what an https target's certificate may chain to besides the system's roots (`--notify-ca`)
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
    /// A PEM file of CA certificates an https target's certificate may chain to, besides the
    /// system's roots (a self-hosted ntfy behind a private CA).
    #[arg(long, env = "HOOKLOG_NOTIFY_CA", value_name = "FILE")]
    pub notify_ca: Option<std::path::PathBuf>,
    /// The address people open hooklog at, for the session links in notices (default:
    /// `http://<bound address>`).
    #[arg(long, env = "HOOKLOG_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,
}

impl NotifyArgs {
    /// Where notices go, or why these flags cannot start a server (an https target and no root
    /// certificate to check it with among them).
    pub fn notify(&self) -> anyhow::Result<Notify> {
        let targets = self
            .notify
            .iter()
            .map(|given| NotifyTarget::parse(given).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if targets.iter().any(NotifyTarget::is_https) || self.notify_ca.is_some() {
            crate::notify::tls::config(self.notify_ca.as_deref()).map_err(anyhow::Error::msg)?;
        }
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
            ca: self.notify_ca.clone(),
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
            ..NotifyArgs::default()
        };
        let error = args.notify().unwrap_err().to_string();
        assert!(
            error.contains("slack") && !error.contains("sekrit"),
            "{error}"
        );
        let args = NotifyArgs {
            notify: vec!["ntfy:http://127.0.0.1:9/topic".into()],
            public_url: Some("https://hooklog.example/".into()),
            ..NotifyArgs::default()
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
        assert_eq!(
            parse("slack:https://hooks.slack.com/services/T/B/sekrit"),
            Ok((NotifyKind::Slack, "hooks.slack.com".into()))
        );
        assert_eq!(
            parse("ntfy:https://user:pass@ntfy.sh/topic"),
            Ok((NotifyKind::Ntfy, "ntfy.sh".into()))
        );
        for bad in [
            "slack:hooks.slack.com/services/T/B/sekrit",
            "ftp://x/sekrit",
            "https://[sekrit]/x",
            "sekrit",
        ] {
            let error = parse(bad).unwrap_err();
            assert!(!error.contains("sekrit"), "{error}");
        }
    }

    #[test]
    fn an_https_target_is_taken_with_the_ca_to_trust_and_a_bad_ca_stops_the_start() {
        let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls/ca.pem");
        let args = NotifyArgs {
            notify: vec!["ntfy:https://127.0.0.1:9/sekrit".into()],
            notify_ca: Some(ca.clone()),
            ..NotifyArgs::default()
        };
        let notify = args.notify().unwrap();
        assert!(notify.targets[0].is_https());
        assert_eq!(notify.ca.as_deref(), Some(ca.as_path()));

        let args = NotifyArgs {
            notify: vec!["ntfy:https://127.0.0.1:9/sekrit".into()],
            notify_ca: Some(ca.with_file_name("server.key")),
            ..NotifyArgs::default()
        };
        let error = args.notify().unwrap_err().to_string();
        assert!(
            error.contains("--notify-ca") && !error.contains("sekrit"),
            "{error}"
        );
    }
}
