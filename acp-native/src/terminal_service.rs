//! Client-side terminal service (`terminal/*`).
