//! One notice to one target: POSTed until a 2xx answers, waiting `backoff` after the first
//! failed attempt and twice as long after each next one (up to `backoff_max`), at most
//! `attempts` times, and never again once the spell has ended (the agent no longer waits).
//! Each attempt is recorded in the waiting session: `notice_failed` (attempt, status or
//! error; `final` on the last), `notice_sent` on success. The target is named by its index,
//! kind and host: its URL is a secret and is never logged nor stored.

use super::body::Notice;
use super::send::Client;
use super::spell::{FAILED, Job, SENT};
use crate::config::{Notify, NotifyTarget};
use crate::event::NewEvent;
use crate::event::id::new_event_id;
use crate::store::Store;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Attempts in progress at once, over all notices: the rest wait for a place (a receiver that
/// hangs holds one until the attempt's timeout).
pub const MAX_SENDING: usize = 8;

/// What every delivery shares: the client, the targets, the retry policy, the store to record in.
pub struct Deliverer {
    client: Client,
    targets: Vec<NotifyTarget>,
    policy: Notify,
    store: Arc<Store>,
    sending: Semaphore,
}

/// How an attempt went.
enum Attempt {
    Sent(u16),
    Failed(Value),
    /// The spell ended first: nothing was sent.
    Ended,
}

impl Deliverer {
    /// The deliverer of `policy`'s notices, or why there is none (no root certificate to check
    /// an https target with, an unreadable `--notify-ca`).
    pub fn new(store: &Arc<Store>, policy: &Notify) -> Result<Deliverer, String> {
        let https = policy.targets.iter().any(NotifyTarget::is_https);
        let client = Client::new(https, policy.ca.as_deref(), policy.timeout)?;
        Ok(Deliverer {
            client,
            targets: policy.targets.clone(),
            policy: policy.clone(),
            store: store.clone(),
            sending: Semaphore::new(MAX_SENDING),
        })
    }

    /// Delivers `job`; returns its session, spell and target once the target is owed nothing
    /// more for the spell.
    pub async fn run(self: Arc<Self>, mut job: Job) -> (String, i64, usize) {
        let done = (job.notice.session.clone(), job.notice.spell, job.target);
        let mut backoff = self.policy.backoff;
        for attempt in 1..=self.policy.attempts {
            let last = attempt == self.policy.attempts;
            match self.attempt(&job).await {
                Attempt::Sent(status) => {
                    let detail = json!({"attempt": attempt, "status": status});
                    self.record(&job, SENT, detail).await;
                    return done;
                }
                Attempt::Failed(cause) => {
                    let mut detail = json!({"attempt": attempt, "final": last});
                    merge(&mut detail, cause);
                    self.record(&job, FAILED, detail).await;
                }
                Attempt::Ended => return self.stopped(&job, attempt - 1).await,
            }
            if last {
                return done;
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = job.ended.changed() => return self.stopped(&job, attempt).await,
            }
            backoff = (backoff * 2).min(self.policy.backoff_max);
        }
        done
    }

    /// The spell ended before its notice was delivered: nothing more is sent. After failed
    /// attempts that is recorded as the final failure; before any, nothing was tried.
    async fn stopped(&self, job: &Job, attempts: u32) -> (String, i64, usize) {
        if attempts > 0 {
            let detail = json!({"attempt": attempts, "final": true,
                "error": "the session stopped waiting before the notice was delivered"});
            self.record(job, FAILED, detail).await;
        }
        (job.notice.session.clone(), job.notice.spell, job.target)
    }

    async fn attempt(&self, job: &Job) -> Attempt {
        let Ok(_sending) = self.sending.acquire().await else {
            return Attempt::Ended;
        };
        // Waiting for a place may have outlasted the spell.
        if job.ended.has_changed().is_err() {
            return Attempt::Ended;
        }
        let target = &self.targets[job.target];
        let request = job.notice.request(target.kind);
        match self.client.post(&target.url.0, &request).await {
            Ok(status) if (200..300).contains(&status) => Attempt::Sent(status),
            Ok(status) => Attempt::Failed(json!({"status": status})),
            Err(error) => Attempt::Failed(json!({"error": error})),
        }
    }

    /// Appends one outcome to the waiting session. The writer's queue is waited on (this is
    /// no client's request); a writer that has stopped leaves it unrecorded, so after a
    /// restart the notice is sent again.
    async fn record(&self, job: &Job, kind: &str, detail: Value) {
        let event = outcome_event(
            &job.notice,
            job.target,
            &self.targets[job.target],
            kind,
            detail,
        );
        let appended = match self.store.writer.enqueue(vec![event]).await {
            Ok(answer) => answer
                .await
                .unwrap_or(Err(crate::store::AppendError::Stopped)),
            Err(e) => Err(e),
        };
        if let Err(e) = appended {
            tracing::warn!(error = %e, session = %job.notice.session, "recording a notice's outcome");
        }
    }
}

/// A `notice_sent` or `notice_failed` event: in the waiting session, source `coordination`,
/// naming the spell and the target (index, kind, host: never its URL).
pub fn outcome_event(
    notice: &Notice,
    index: usize,
    target: &NotifyTarget,
    kind: &str,
    detail: Value,
) -> NewEvent {
    let mut payload = json!({
        "sessionId": notice.session,
        "spellSequence": notice.spell,
        "spellEventId": notice.spell_event_id,
        "reason": notice.reason.as_str(),
        "target": index,
        "targetKind": target.kind.as_str(),
        "targetHost": target.host(),
    });
    merge(&mut payload, detail);
    NewEvent {
        event_id: new_event_id(),
        generated_id: true,
        session_id: Some(notice.session.clone()),
        event_type: kind.to_string(),
        source: crate::coordination::SOURCE.to_string(),
        event_time: None,
        received_at: None,
        origin: None,
        payload: payload.to_string(),
    }
}

fn merge(into: &mut Value, more: Value) {
    if let (Value::Object(into), Value::Object(more)) = (into, more) {
        into.extend(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NotifyKind;
    use crate::notify::body::Reason;
    use serde_json::Map;

    #[test]
    fn an_outcome_names_the_spell_and_the_target_by_host_never_by_url() {
        let notice = Notice {
            session: "s1".into(),
            spell: 7,
            spell_event_id: "e7".into(),
            reason: Reason::Idle,
            cwd: None,
            tool: None,
            message: None,
            since: "2026-12-03T10:00:00.000Z".into(),
            url: "http://127.0.0.1:2468/s/s1".into(),
        };
        let target = NotifyTarget::parse("slack:http://relay.lan/services/T0/B0/sekrit").unwrap();
        let event = outcome_event(
            &notice,
            1,
            &target,
            FAILED,
            json!({"attempt": 2, "status": 500}),
        );
        assert_eq!(event.session_id.as_deref(), Some("s1"));
        assert_eq!(event.source, "coordination");
        assert!(!event.payload.contains("sekrit"), "{}", event.payload);
        let payload: Map<String, Value> = serde_json::from_str(&event.payload).unwrap();
        assert_eq!(payload["spellSequence"], 7);
        assert_eq!(payload["target"], 1);
        assert_eq!(payload["targetKind"], NotifyKind::Slack.as_str());
        assert_eq!(payload["targetHost"], "relay.lan");
        assert_eq!(payload["attempt"], 2);
        assert_eq!(payload["status"], 500);
    }
}
