//! Speed of the protocol core on the lines a client sends at start and per call: initialize,
//! tools/list (the frozen bytes), a validated tools/call, and a resources/read.

use criterion::{Criterion, criterion_group, criterion_main};
use ferry_mcp_core::protocol::Server;
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_testkit::fixture;
use std::hint::black_box;

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);
const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

fn initialized() -> Server {
    let mut server = fixture::server("demo");
    server.handle_line(INITIALIZE, NOW);
    server
}

fn bench(c: &mut Criterion) {
    c.bench_function("surface_build_fixture", |b| {
        b.iter(|| black_box(fixture::surface()))
    });
    c.bench_function("initialize", |b| {
        b.iter_batched(
            || fixture::server("demo"),
            |mut server| server.handle_line(INITIALIZE, NOW),
            criterion::BatchSize::SmallInput,
        )
    });
    let lines: [(&str, &[u8]); 4] = [
        ("tools_list", br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#),
        ("tools_call_status", br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fixture_status","arguments":{}}}"#),
        ("tools_call_bad_arguments", br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fixture_post","arguments":{"body":42}}}"#),
        ("resources_read", br#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"ferry://demo/fixture-order/1"}}"#),
    ];
    for (name, line) in lines {
        let mut server = initialized();
        c.bench_function(name, |b| {
            b.iter(|| server.handle_line(black_box(line), NOW))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
