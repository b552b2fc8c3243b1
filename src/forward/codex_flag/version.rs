//! Whether a Codex needs the flag at all, from the version it reports (`codex --version`
//! prints `codex-cli X.Y.Z`). Hooks became a stable, default-on feature in Codex 0.124.0
//! (openai/codex#19012); later (openai/codex#20522) the feature's key became `hooks`, and
//! `codex_hooks` a deprecated alias that makes Codex print a notice at every start. So only a
//! Codex before 0.124.0 gets the flag.

/// A Codex version: `major.minor.patch`, and whether it is a release (a pre-release such as
/// `0.124.0-alpha.1` comes before its release).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub release: bool,
}

/// The first Codex that runs hooks without the flag.
pub const HOOKS_ON_BY_DEFAULT: Version = Version {
    major: 0,
    minor: 124,
    patch: 0,
    release: true,
};

/// What install does with `config.toml` for a Codex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A Codex before [`HOOKS_ON_BY_DEFAULT`]: hooks run only with the flag on.
    Flag,
    /// Hooks are on by default: no flag, and a flag hooklog wrote before comes out.
    NoFlag,
    /// The version is not known: nothing is written.
    Unknown,
}

/// The version in what `codex --version` printed: `codex-cli X.Y.Z`, on its first line.
pub fn from_output(stdout: &str) -> Option<Version> {
    let line = stdout.lines().next()?.trim();
    parse(line.strip_prefix("codex-cli ")?)
}

/// `X.Y.Z`, optionally followed by `-pre-release` or `+build`.
pub fn parse(text: &str) -> Option<Version> {
    let text = text.trim();
    let (core, release) = match text.find(['-', '+']) {
        Some(at) => (&text[..at], text[at..].starts_with('+')),
        None => (text, true),
    };
    let mut parts = core.split('.').map(|p| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u64>().ok())
            .flatten()
    });
    let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() {
        return None;
    }
    Some(Version {
        major,
        minor,
        patch,
        release,
    })
}

/// Whether a Codex of `version` needs the flag. A build from source reports 0.0.0, which says
/// nothing about what it has.
pub fn need(version: Option<Version>) -> Need {
    match version {
        None => Need::Unknown,
        Some(v) if (v.major, v.minor, v.patch) == (0, 0, 0) => Need::Unknown,
        Some(v) if v < HOOKS_ON_BY_DEFAULT => Need::Flag,
        Some(_) => Need::NoFlag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need_for(stdout: &str) -> Need {
        need(from_output(stdout))
    }

    #[test]
    fn an_old_codex_needs_the_flag() {
        assert_eq!(need_for("codex-cli 0.123.0\n"), Need::Flag);
        assert_eq!(need_for("codex-cli 0.114.0"), Need::Flag);
        // A pre-release of the first default-on version may predate the change.
        assert_eq!(need_for("codex-cli 0.124.0-alpha.2\n"), Need::Flag);
    }

    #[test]
    fn a_current_codex_needs_none() {
        assert_eq!(need_for("codex-cli 0.124.0\n"), Need::NoFlag);
        assert_eq!(need_for("codex-cli 0.171.0\n"), Need::NoFlag);
        assert_eq!(need_for("codex-cli 0.172.0-alpha.1"), Need::NoFlag);
        assert_eq!(need_for("codex-cli 1.0.0\n"), Need::NoFlag);
        assert_eq!(need_for("codex-cli 0.124.0+build.7"), Need::NoFlag);
    }

    #[test]
    fn an_unreadable_version_writes_nothing() {
        for stdout in [
            "",
            "\n",
            "codex-cli\n",
            "0.171.0\n",
            "codex 0.171.0\n",
            "codex-cli 0.171\n",
            "codex-cli 0.171.0.1\n",
            "codex-cli v0.171.0\n",
            "codex-cli 0.x.0\n",
            "codex-cli 0.-1.0\n",
            "codex-cli 99999999999999999999.0.0\n",
            "some banner\ncodex-cli 0.171.0\n",
            // A build from source.
            "codex-cli 0.0.0\n",
        ] {
            assert_eq!(need_for(stdout), Need::Unknown, "{stdout:?}");
        }
    }

    #[test]
    fn a_bare_version_parses() {
        assert_eq!(
            parse("0.123.4"),
            Some(Version {
                major: 0,
                minor: 123,
                patch: 4,
                release: true
            })
        );
        assert_eq!(parse("0.123.4-rc.1").map(|v| v.release), Some(false));
        assert_eq!(parse("0.123"), None);
    }
}
