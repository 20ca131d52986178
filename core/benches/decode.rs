//! `cargo bench -p shortlink-core --bench decode`: the per-request cost of
//! validating a code inside nginx.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use shortlink_core::{Codec, DeploymentKey};

fn decode(c: &mut Criterion) {
    let codec = Codec::new(&DeploymentKey::from_bytes([42; 32]));
    let id = Codec::first_id_of_length(7) + 123_456;
    let good = codec.encode(id);
    let mut bad = good.as_bytes().to_vec();
    let last = bad.len() - 1;
    bad[last] = if bad[last] == b'a' { b'b' } else { b'a' };

    c.bench_function("decode valid 7-char code", |b| {
        b.iter(|| codec.decode(black_box(good.as_bytes())))
    });
    c.bench_function("decode invalid 7-char code", |b| {
        b.iter(|| codec.decode(black_box(&bad)))
    });
    c.bench_function("encode 7-char code", |b| {
        b.iter(|| codec.encode(black_box(id)))
    });
}

fn classify(c: &mut Criterion) {
    let ua: &[u8] = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
    c.bench_function("classify desktop Chrome user agent", |b| {
        b.iter(|| shortlink_core::device::classify(Some(black_box(ua))))
    });
}

criterion_group!(benches, decode, classify);
criterion_main!(benches);
