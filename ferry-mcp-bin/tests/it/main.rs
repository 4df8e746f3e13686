//! Integration tests of the `ferry` binary.

mod admin;
mod clients;
mod connect;
mod serve;
mod talk;
