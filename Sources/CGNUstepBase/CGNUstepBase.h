/* Intentionally empty: the module exists for its pkg-config flags, not for declarations. */
