//! Engine process supervision: spawning an engine for a workspace through the process spawner
//! port, health checks, restart with back-off and the crash-loop breaker.
//!
//! IO contract: spawns and signals processes through the process spawner port only.
