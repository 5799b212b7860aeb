//! Reading a Harbor job directory as a run (module doc of `interchange`).
