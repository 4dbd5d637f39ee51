//! Observers that stop a search by wall-clock time or by a stop flag (the engine itself reads no clock).
