//! Unit tests of the Codex flag: every shape round-trips byte for byte, the user's own
//! settings and edits stay, unreadable files are refused.

use super::locate::locate;
use super::*;

fn flag(text: &str) -> Option<bool> {
    locate(text, "config.toml").unwrap().flag.map(|(on, _)| on)
}

/// Every shape the flag can be written in: installing turns it on, installing again changes
/// nothing, and uninstalling gives back the original bytes.
#[test]
fn each_shape_comes_back_byte_for_byte() {
    let shapes = [
        ("no file", ""),
        (
            "no features",
            "model = \"o3\" # mine\n\n[tui]\nnotifications = true\n",
        ),
        ("no trailing newline", "model = \"o3\""),
        ("only a newline", "\n"),
        (
            "crlf",
            "model = \"o3\"\r\n[tui]\r\nnotifications = true\r\n",
        ),
        (
            "table without the key",
            "[features] # flags\nweb_search = true\n\n[tui]\nx = 1\n",
        ),
        ("table header last, no newline", "a = 1\n[features]"),
        ("empty table", "[features]\n"),
        (
            "false",
            "[features]\ncodex_hooks = false # off for now\nother = 1\n",
        ),
        ("false, crlf", "[features]\r\ncodex_hooks = false\r\n"),
        ("dotted false", "features.codex_hooks = false\n[tui]\n"),
        (
            "dotted other",
            "# top\nfeatures.web_search = true\nmodel = \"o3\"\n",
        ),
        ("inline", "features = { web_search = true } # inline\n"),
        ("inline empty", "features = {}\n"),
        (
            "inline false",
            "features = { codex_hooks = false, b = true }\n",
        ),
        ("sub-table only", "[features.extra]\nq = 1\n"),
    ];
    for (what, original) in shapes {
        let on = turn_on(original, "config.toml").unwrap();
        assert_ne!(on, original, "{what}: nothing changed");
        assert_eq!(flag(&on), Some(true), "{what}: not on:\n{on}");
        assert_eq!(turn_on(&on, "config.toml").unwrap(), on, "{what}: twice");
        assert_eq!(undo(&on, "config.toml").unwrap(), original, "{what}:\n{on}");
    }
}

#[test]
fn what_install_writes() {
    assert_eq!(
        turn_on("", "c").unwrap(),
        "[features] # hooklog: added\ncodex_hooks = true # hooklog: added\n"
    );
    assert_eq!(
        turn_on("a = 1\n", "c").unwrap(),
        "a = 1\n\n[features] # hooklog: added\ncodex_hooks = true # hooklog: added\n"
    );
    assert_eq!(
        turn_on("[features]\nx = 1\n", "c").unwrap(),
        "[features]\ncodex_hooks = true # hooklog: added\nx = 1\n"
    );
    assert_eq!(
        turn_on("[features]\ncodex_hooks = false # mine\n", "c").unwrap(),
        format!("[features]\n{WAS_FALSE}\ncodex_hooks = true # mine\n")
    );
    assert_eq!(
        turn_on("features = { x = 1 }\n", "c").unwrap(),
        format!("{ADDED_INLINE}\nfeatures = {{ codex_hooks = true, x = 1 }}\n")
    );
    assert_eq!(
        turn_on("features.x = 1\n", "c").unwrap(),
        "features.codex_hooks = true # hooklog: added\nfeatures.x = 1\n"
    );
}

/// The user's own `true`, and Codex's newer key `hooks` either way, are the user's choice.
#[test]
fn a_setting_of_the_users_is_left_alone() {
    for text in [
        "[features]\ncodex_hooks = true\n",
        "features.codex_hooks = true # mine\n",
        "features = { codex_hooks = true }\n",
        "[features]\nhooks = false\n",
        "[features]\nhooks = true\n",
    ] {
        assert_eq!(turn_on(text, "c").unwrap(), text);
        assert_eq!(undo(text, "c").unwrap(), text);
    }
    assert!(hooks_off("[features]\nhooks = false\n"));
    assert!(hooks_off("[features]\ncodex_hooks = false\n"));
    assert!(hooks_off("features.codex_hooks = false\n"));
    assert!(!hooks_off(
        "[features]\ncodex_hooks = false\nhooks = true\n"
    ));
    assert!(!hooks_off("[features]\ncodex_hooks = true\n"));
    assert!(!hooks_off(""));
}

/// Edits made after install stay; only hooklog's own change is taken back.
#[test]
fn uninstall_after_the_user_edited_undoes_only_hooklogs_change() {
    let original = "[tui]\nx = 1\n";
    let on = turn_on(original, "c").unwrap();
    // The user adds a key to the table hooklog made, and a setting elsewhere.
    let edited = on.replace("[tui]\n", "[tui]\ny = 2\n").replace(
        "codex_hooks = true # hooklog: added\n",
        "codex_hooks = true # hooklog: added\nweb_search = true\n",
    );
    assert_eq!(
        undo(&edited, "c").unwrap(),
        "[tui]\ny = 2\nx = 1\n\n[features]\nweb_search = true\n"
    );
    // The user turned the flag back off themselves: the value is theirs, the marker goes.
    let was_false = turn_on("[features]\ncodex_hooks = false\n", "c").unwrap();
    let off_again = was_false.replace("= true", "= false");
    assert_eq!(
        undo(&off_again, "c").unwrap(),
        "[features]\ncodex_hooks = false\n"
    );
    // A line hooklog added that the user has since changed is theirs now.
    let changed = turn_on("[features]\n", "c")
        .unwrap()
        .replace("= true", "= false");
    assert_eq!(undo(&changed, "c").unwrap(), changed);
    // Installing over it turns it on again without a second marker.
    assert_eq!(
        turn_on(&changed, "c").unwrap(),
        turn_on("[features]\n", "c").unwrap()
    );
}

#[test]
fn refuses_what_it_cannot_read() {
    assert!(matches!(
        turn_on("[features", "c"),
        Err(FlagError::Toml(..))
    ));
    for text in [
        "features = 1\n",
        "[[features]]\n",
        "[features]\ncodex_hooks = \"yes\"\n",
    ] {
        assert!(
            matches!(turn_on(text, "c"), Err(FlagError::Shape(_))),
            "{text}"
        );
    }
}
