//! Live delivery of committed events. The hub is fed by the writer after each commit.

mod hub;

pub use hub::Hub;
