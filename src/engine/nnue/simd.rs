//! Which instructions the network's two hot loops (the accumulator's row update and the output's
//! dot product) run with. They are plain Rust that the compiler vectorises; the portable build
//! targets the x86-64 baseline (SSE2), so each loop is also compiled for AVX2 and picked at run
//! time where the processor has it. Integer arithmetic either way: the same values, the same
//! search (the bench signature does not move).

/// Whether this processor runs AVX2 (the standard library caches the answer).
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}
