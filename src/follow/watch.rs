//! One follower per transcript: [`Followers`] starts a task for a file a trigger names,
//! unless one is following it already, which is then told to keep going. A follower reads the
//! file, then looks at it every [`POLL`](super::POLL), reading what was added, and stops once
//! nothing was added for [`QUIET`](super::QUIET) since its last trigger or growth.
//!
//! A follower leaves the map, under its lock, only after checking under that lock that no
//! trigger came in the meantime; a trigger sets `poked` under the same lock. So a trigger is
//! never lost between a follower's last look and its end.

use super::{POLL, Position, QUIET, Target, read_new};
use crate::ingest::transcript::Keep;
use crate::store::Store;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The files followed now, each with its "triggered again" flag.
#[derive(Clone, Default)]
pub struct Followers {
    files: Arc<Mutex<HashMap<PathBuf, Arc<AtomicBool>>>>,
}

impl Followers {
    /// Follows `target`'s file: starts a follower in `tasks`, or pokes the one there is.
    pub fn follow(&self, tasks: &mut JoinSet<()>, store: &Arc<Store>, target: Target, keep: Keep) {
        let mut files = self.files.lock().unwrap();
        if let Some(poked) = files.get(&target.path) {
            poked.store(true, Ordering::Release);
            return;
        }
        let poked = Arc::new(AtomicBool::new(false));
        files.insert(target.path.clone(), poked.clone());
        drop(files);
        let (followers, store) = (self.clone(), store.clone());
        tasks.spawn(async move {
            if let Err(e) = followers.watch(&store, &target, keep, &poked).await {
                tracing::debug!(path = %target.path.display(), error = %e, "transcript not followed");
                followers.files.lock().unwrap().remove(&target.path);
            }
        });
    }

    /// Reads `target` until it has been quiet for [`QUIET`], then leaves the map.
    async fn watch(
        &self,
        store: &Arc<Store>,
        target: &Target,
        keep: Keep,
        poked: &AtomicBool,
    ) -> anyhow::Result<()> {
        let mut at = Position::stored(store, target).await?;
        let mut busy = Instant::now();
        loop {
            if read_new(store, target, &mut at, keep).await? || poked.swap(false, Ordering::AcqRel)
            {
                busy = Instant::now();
            }
            if busy.elapsed() >= QUIET {
                let mut files = self.files.lock().unwrap();
                if !poked.load(Ordering::Acquire) {
                    files.remove(&target.path);
                    return Ok(());
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
