//! Integration tests of the `ferry` binary.

mod clients;
mod serve;
