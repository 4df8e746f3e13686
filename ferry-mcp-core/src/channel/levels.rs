//! (identity and levels layer: filled in by the identity work)
