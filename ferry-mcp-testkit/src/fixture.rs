//! (fixture tool group: filled in by the protocol work)
