//! (scripted session driver: filled in by the protocol work)
