//! Integration tests of the `ferry` binary.

mod admin;
mod attacks;
mod clients;
mod connect;
mod dashboard;
mod e2e;
mod fleet;
mod gateway;
mod kills;
mod masking;
mod orders;
mod paging;
mod releases;
mod saves;
mod serve;
mod talk;
