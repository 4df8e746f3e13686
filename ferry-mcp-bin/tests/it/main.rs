//! Integration tests of the `ferry` binary.

mod admin;
mod attacks;
mod clients;
mod connect;
mod e2e;
mod fleet;
mod gateway;
mod masking;
mod orders;
mod paging;
mod saves;
mod serve;
mod talk;
