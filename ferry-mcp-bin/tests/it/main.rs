//! Integration tests of the `ferry` binary.

mod admin;
