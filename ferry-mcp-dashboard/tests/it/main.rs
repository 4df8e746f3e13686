//! The dashboard's tests: every route through the gate, the refusals, the live stream.

mod fixture;
mod live;
mod refusals;
mod routes;
mod scopes_and_seats;
