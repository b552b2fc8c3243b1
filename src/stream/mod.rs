//! Live delivery of committed events: the hub the writer feeds after each commit, and streams
//! that replay history from a cursor and continue live.

pub mod changes;
pub mod cursor;
pub mod events;
pub mod follower;
pub mod frame;
mod hub;
pub mod metrics;
pub mod responses;
pub mod scope;
pub mod ticks;

pub use hub::{Committed, FrameKind, Hub, Published, Rendered, Subscription};
