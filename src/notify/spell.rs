//! Waiting spells: which events open and end them, and which of the open ones still owe a
//! notice to which target. Pure: the task in `mod.rs` feeds it the log in sequence order and
//! starts the deliveries it says are due.
//!
//! A spell of a session opens at a hook event that asks the user (a `PermissionRequest`, or a
//! `Notification` of a `permission_prompt`, `idle_prompt` or `elicitation_dialog`) and ends at
//! the session's next hook event of any other kind, or at a `permission_response` or
//! `permission_expired` naming the session. One notice per spell and target: another asking
//! event while it is open changes nothing, and a target is owed nothing more once its
//! `notice_sent` (or a final `notice_failed`) is in the log.

use super::body::{Notice, Reason};
use crate::event::StoredEvent;
use crate::ingest::hook;
use crate::projection::agent::{Action, action, cwd_of};
use crate::projection::view::View;
use std::collections::{BTreeMap, HashMap};
use tokio::sync::watch;

/// The event types a delivery records (source `coordination`, in the waiting session).
pub const SENT: &str = "notice_sent";
pub const FAILED: &str = "notice_failed";
/// The coordination events that answer a permission request: they end its session's spell.
pub const ANSWERS: [&str; 2] = ["permission_response", "permission_expired"];

/// Spells tracked at once. Past it the oldest is let go of: a session that has waited longest
/// is the likeliest to be one whose agent is gone without a `SessionEnd`.
pub const MAX_OPEN: usize = 4096;

/// A delivery to start: the spell's notice to one target. `ended` resolves (its sender is
/// dropped) when the spell ends.
pub struct Job {
    pub notice: std::sync::Arc<Notice>,
    pub target: usize,
    pub ended: watch::Receiver<()>,
}

/// Where one target's notice of a spell is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Owed {
    Due,
    Running,
    Done,
}

struct Spell {
    notice: std::sync::Arc<Notice>,
    targets: Vec<Owed>,
    /// Dropped with the spell: a delivery waiting to try again stops.
    _ended: watch::Sender<()>,
    ended: watch::Receiver<()>,
}

/// The open spells, by session, and which of them owe a notice not yet started.
pub struct Spells {
    targets: usize,
    /// The link base: a notice's link is `<base>/s/<session id>`.
    base: reqwest::Url,
    open: HashMap<String, Spell>,
    /// Open spells by opening sequence, oldest first (for letting the oldest go).
    order: BTreeMap<i64, String>,
    /// Spells with a target still `Due`, by opening sequence.
    due: BTreeMap<i64, String>,
}

impl Spells {
    pub fn new(targets: usize, base: reqwest::Url) -> Spells {
        Spells {
            targets,
            base,
            open: HashMap::new(),
            order: BTreeMap::new(),
            due: BTreeMap::new(),
        }
    }

    /// What one committed event does to the spells.
    pub fn see(&mut self, event: &StoredEvent) {
        if event.source == hook::SOURCE {
            let Some(session) = event.session_id.as_deref() else {
                return;
            };
            if !may_ask(event) {
                return self.close(session);
            }
            let view = View::parse(&event.payload);
            match reason(event, &view) {
                Some(reason) if !self.open.contains_key(session) => {
                    let notice = self.notice(session, event, &view, reason);
                    self.open(notice);
                }
                Some(_) => {}
                None => self.close(session),
            }
        } else if event.source == crate::coordination::SOURCE {
            let view = View::parse(&event.payload);
            let session = event.session_id.as_deref().or(view.text("sessionId"));
            let Some(session) = session else {
                return;
            };
            match event.event_type.as_str() {
                kind if ANSWERS.contains(&kind) => self.close(session),
                SENT | FAILED => self.recorded(session, event.event_type == SENT, &view),
                _ => {}
            }
        }
    }

    /// The deliveries due, oldest spell first, at most `room` of them; each is `Running` from now.
    pub fn start(&mut self, room: usize) -> Vec<Job> {
        let mut jobs = Vec::new();
        while jobs.len() < room {
            let Some((_, session)) = self.due.pop_first() else {
                break;
            };
            let Some(spell) = self.open.get_mut(&session) else {
                continue;
            };
            for (target, owed) in spell.targets.iter_mut().enumerate() {
                if *owed == Owed::Due && jobs.len() < room {
                    *owed = Owed::Running;
                    jobs.push(Job {
                        notice: spell.notice.clone(),
                        target,
                        ended: spell.ended.clone(),
                    });
                }
            }
            if spell.targets.contains(&Owed::Due) {
                self.due.insert(spell.notice.spell, session);
            }
        }
        jobs
    }

    /// A delivery ended (sent, given up, or stopped with its spell): its target is owed
    /// nothing more for that spell.
    pub fn finished(&mut self, session: &str, spell: i64, target: usize) {
        self.settle(session, spell, target);
    }

    /// Spells open now.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    fn open(&mut self, notice: Notice) {
        if self.open.len() >= MAX_OPEN
            && let Some((_, oldest)) = self.order.first_key_value()
        {
            let oldest = oldest.clone();
            tracing::warn!(session = %oldest, "too many sessions waiting; the oldest is no longer tracked for notices");
            self.close(&oldest);
        }
        let (sender, ended) = watch::channel(());
        let (session, start) = (notice.session.clone(), notice.spell);
        self.order.insert(start, session.clone());
        self.due.insert(start, session.clone());
        self.open.insert(
            session,
            Spell {
                notice: std::sync::Arc::new(notice),
                targets: vec![Owed::Due; self.targets],
                _ended: sender,
                ended,
            },
        );
    }

    fn close(&mut self, session: &str) {
        if let Some(spell) = self.open.remove(session) {
            self.order.remove(&spell.notice.spell);
            self.due.remove(&spell.notice.spell);
        }
    }

    /// A `notice_sent`, or a `notice_failed`: a final one settles its target (a restart
    /// reads them back, so it does not notify again for what was sent before).
    fn recorded(&mut self, session: &str, sent: bool, view: &View) {
        let settled = sent || view.bool("final") == Some(true);
        if let (true, Some(spell), Some(target)) =
            (settled, view.int("spellSequence"), view.int("target"))
        {
            self.settle(session, spell, target as usize);
        }
    }

    fn settle(&mut self, session: &str, spell: i64, target: usize) {
        let Some(open) = self.open.get_mut(session) else {
            return;
        };
        if open.notice.spell != spell {
            return;
        }
        if let Some(owed) = open.targets.get_mut(target) {
            *owed = Owed::Done;
        }
        if !open.targets.contains(&Owed::Due) {
            self.due.remove(&spell);
        }
    }

    fn notice(&self, session: &str, event: &StoredEvent, view: &View, reason: Reason) -> Notice {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("s").push(session);
        }
        Notice {
            session: session.to_string(),
            spell: event.sequence,
            spell_event_id: event.event_id.clone(),
            reason,
            cwd: cwd_of(view).map(str::to_string),
            tool: view.tool().map(str::to_string),
            message: view.text("message").map(|m| bounded(m, 300)),
            since: event.event_time.clone(),
            url: url.to_string(),
        }
    }
}

/// Why a hook event asks the user, or `None` when it is any other hook event (which ends a
/// session's spell). A `PermissionRequest` (or seed 000's `permission_request` type) asks
/// for a permission; a `Notification` asks as its `notificationType` says.
pub fn reason(event: &StoredEvent, view: &View) -> Option<Reason> {
    match action(&event.event_type, view.hook_type()) {
        Action::Permission => Some(Reason::Permission),
        Action::Notify => match view.text("notificationType") {
            Some("permission_prompt") => Some(Reason::Permission),
            Some("idle_prompt") => Some(Reason::Idle),
            Some("elicitation_dialog") => Some(Reason::Elicitation),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a hook event can be one that asks ([`reason`]), without parsing its payload: most
/// are not, and this task reads every hook event ingested.
fn may_ask(event: &StoredEvent) -> bool {
    matches!(
        event.event_type.as_str(),
        "PermissionRequest" | "Notification"
    ) || event.payload.contains("permission_request")
}

/// At most `max` characters of `text`, with `…` when cut.
fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sequence: i64, source: &str, kind: &str, payload: &str) -> StoredEvent {
        StoredEvent {
            sequence,
            event_id: format!("e{sequence}"),
            session_id: Some("s".into()),
            session_sequence: Some(sequence),
            event_type: kind.into(),
            source: source.into(),
            event_time: "2026-12-03T10:00:00.000Z".into(),
            received_at: "2026-12-03T10:00:00.000Z".into(),
            origin: "here".into(),
            payload: payload.into(),
        }
    }

    fn hook(sequence: i64, kind: &str, payload: &str) -> StoredEvent {
        event(sequence, "hook", kind, payload)
    }

    fn spells() -> Spells {
        Spells::new(2, reqwest::Url::parse("http://h:1/").unwrap())
    }

    /// The (spell, target) pairs `start` hands out.
    fn started(spells: &mut Spells) -> Vec<(i64, usize)> {
        spells
            .start(usize::MAX)
            .iter()
            .map(|job| (job.notice.spell, job.target))
            .collect()
    }

    #[test]
    fn a_spell_owes_one_notice_per_target_and_asking_again_owes_nothing() {
        let mut spells = spells();
        spells.see(&hook(
            1,
            "PermissionRequest",
            r#"{"toolName":"Bash","cwd":"/w/shop"}"#,
        ));
        let jobs = spells.start(usize::MAX);
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].notice.tool.as_deref(), Some("Bash"));
        assert_eq!(jobs[0].notice.url, "http://h:1/s/s");
        let idle = r#"{"notificationType":"idle_prompt"}"#;
        spells.see(&hook(2, "Notification", idle));
        spells.see(&hook(3, "PermissionRequest", "{}"));
        assert!(started(&mut spells).is_empty());
        // A tool ran: the spell is over; the next ask opens another.
        spells.see(&hook(4, "PostToolUse", "{}"));
        assert!(
            jobs[0].ended.has_changed().is_err(),
            "its deliveries are told"
        );
        spells.see(&hook(5, "Notification", idle));
        assert_eq!(started(&mut spells), [(5, 0), (5, 1)]);
    }

    #[test]
    fn only_asking_notifications_open_a_spell() {
        let mut spells = spells();
        let other = r#"{"notificationType":"auth_success"}"#;
        spells.see(&hook(1, "Notification", other));
        spells.see(&hook(2, "PreToolUse", r#"{"type":"permission_request"}"#));
        assert_eq!(
            started(&mut spells),
            [(2, 0), (2, 1)],
            "seed 000's type asks"
        );
        spells.see(&hook(3, "Notification", other));
        let prompt = r#"{"notification_type":"elicitation_dialog"}"#;
        spells.see(&hook(4, "Notification", prompt));
        let jobs = spells.start(1);
        assert_eq!(jobs[0].notice.reason, Reason::Elicitation);
        assert_eq!(
            started(&mut spells),
            [(4, 1)],
            "the rest when there is room"
        );
    }

    #[test]
    fn a_permission_answer_ends_the_spell_it_names() {
        let mut spells = spells();
        spells.see(&hook(1, "PermissionRequest", "{}"));
        let mut answer = event(
            2,
            "coordination",
            "permission_response",
            r#"{"sessionId":"s"}"#,
        );
        answer.session_id = None;
        spells.see(&answer);
        assert_eq!(spells.open_count(), 0);
        assert!(started(&mut spells).is_empty());
    }

    #[test]
    fn a_sent_or_given_up_notice_in_the_log_settles_its_target() {
        let mut spells = spells();
        spells.see(&hook(1, "PermissionRequest", "{}"));
        let outcome = |sequence, kind, body: &str| event(sequence, "coordination", kind, body);
        spells.see(&outcome(
            2,
            FAILED,
            r#"{"spellSequence":1,"target":0,"final":false}"#,
        ));
        spells.see(&outcome(3, SENT, r#"{"spellSequence":1,"target":1}"#));
        spells.see(&outcome(4, SENT, r#"{"spellSequence":9,"target":0}"#));
        assert_eq!(
            started(&mut spells),
            [(1, 0)],
            "a failed attempt settles nothing"
        );
        spells.finished("s", 1, 0);
        spells.see(&outcome(
            5,
            FAILED,
            r#"{"spellSequence":1,"target":0,"final":true}"#,
        ));
        assert!(started(&mut spells).is_empty());
        assert_eq!(spells.open_count(), 1, "settled, the spell is still open");
    }
}
