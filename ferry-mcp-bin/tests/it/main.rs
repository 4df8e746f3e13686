//! Integration tests of the `ferry` binary.
