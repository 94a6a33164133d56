//! The two functions of the C math library this binary calls, `pow` (tokio's runtime
//! statistics) and `log2` (the redaction's entropy test, `bb-normalize`), defined here from
//! the `libm` crate (a port of the same algorithms), so the sidecar loads no `libm.so`: the
//! dynamic loader resolves every indirect function of a library it loads, whatever the
//! program imports from it, and the resolvers of libm's ~100 are spread over its code, which
//! kept ~0.3 MB of it resident in every sidecar for two functions (BENCHMARKS.md, "Idle and
//! per-connection memory"). A definition in the executable comes before any library's, and
//! the linker (`--as-needed`) then leaves libm out. A dependency that starts calling another
//! libm function brings the library back, which costs memory, nothing else; the test
//! `the_sidecar_loads_no_c_math_library` says so.

/// `x` to the power `y`, as C's `pow`.
#[unsafe(no_mangle)]
extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// The base-2 logarithm of `x`, as C's `log2`.
#[unsafe(no_mangle)]
extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

#[cfg(test)]
mod tests {
    /// The values C's functions give, edge cases included.
    #[test]
    fn the_functions_answer_as_the_c_library_does() {
        assert_eq!(super::pow(2.0, 10.0), 1024.0);
        assert_eq!(super::pow(0.9, 0.0), 1.0);
        assert_eq!(super::pow(-2.0, 3.0), -8.0);
        assert!(super::pow(-2.0, 0.5).is_nan());
        assert_eq!(super::pow(0.0, -1.0), f64::INFINITY);
        assert_eq!(super::log2(8.0), 3.0);
        assert_eq!(super::log2(1.0), 0.0);
        assert_eq!(super::log2(0.0), f64::NEG_INFINITY);
        assert!(super::log2(-1.0).is_nan());
        assert!((super::log2(0.1) + std::f64::consts::LOG2_10).abs() < 1e-15);
    }
}
