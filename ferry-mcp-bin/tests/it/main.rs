//! Integration tests of the `ferry` binary.

mod admin;
mod attacks;
mod clients;
mod connect;
mod orders;
mod serve;
