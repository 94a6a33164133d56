//! bb-acp against the real `kilo acp` (with the mock LLM) and a fake agent for faults.

mod fake;
mod harness;
mod kilo;
