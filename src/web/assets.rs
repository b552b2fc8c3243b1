//! The web view's files, embedded at build time with `include_bytes!`: the binary needs
//! nothing beside it, and the page fetches nothing from anywhere else. No bundler: each
//! JavaScript file is an ES module the browser loads as it is.

pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            bytes: include_bytes!(concat!("assets/", $name)),
        }
    };
}

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

pub static INDEX: &Asset = &asset!("index.html", HTML);
pub static LOGIN: &Asset = &asset!("login.html", HTML);

/// Every file served under `/assets/`.
pub static FILES: &[Asset] = &[
    asset!("app.css", CSS),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("board.js", JS),
    asset!("approvals.js", JS),
    asset!("approval.js", JS),
    asset!("notifications.js", JS),
    asset!("pulse.js", JS),
    asset!("session.js", JS),
    asset!("timeline.js", JS),
    asset!("lanes.js", JS),
    asset!("usage.js", JS),
    asset!("replay.js", JS),
    asset!("coordination.js", JS),
    asset!("login.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

pub fn find(name: &str) -> Option<&'static Asset> {
    FILES.iter().find(|asset| asset.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_stay_small() {
        let total: usize = FILES.iter().map(|a| a.bytes.len()).sum::<usize>()
            + INDEX.bytes.len()
            + LOGIN.bytes.len();
        // 150 KB gzipped is the budget; uncompressed text is a safe upper bound of it.
        assert!(total < 150_000, "the web view's files hold {total} bytes");
    }

    #[test]
    fn every_module_a_page_imports_is_embedded() {
        for asset in FILES.iter().chain([INDEX, LOGIN]) {
            let text = String::from_utf8_lossy(asset.bytes);
            let named = text.match_indices("/assets/").map(|(i, m)| i + m.len());
            let imported = text.match_indices("from \"./").map(|(i, m)| i + m.len());
            for start in named.chain(imported) {
                let rest = &text[start..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                    .collect();
                assert!(find(&name).is_some(), "{} names /assets/{name}", asset.name);
            }
        }
    }
}
