//! (TempChannel builder: filled in by the identity work)
