//! Calibration: rating estimation from the results log, coefficient fit, report, simulation.
//! `cli.rs` is the `ladder calibrate` command line; each step lives in its own module, and
//! the rating estimator itself below the arena and calibration (`crate::rating`), which both
//! use it.

pub mod apply;
pub mod arena_loop;
pub mod cli;
pub mod fetch;
pub mod fit;
pub mod likeness;
pub mod pipeline;
pub mod report;
pub mod select;
pub mod simulate;
pub mod svg;
pub mod update;
