//! The environment of the agents acp starts (and of the commands they run in terminals):
//! the allowlist, or everything (`--inherit-env`), plus the `--env` items (`NAME`, `NAME_*`,
//! `NAME=VALUE`) and a registry entry's variables set before them.

/// The allowlist (or everything, `inherit`) plus `--env` items (`NAME`, `NAME_*`, `NAME=VALUE`).
pub fn env_policy(inherit: bool, items: &[String]) -> acp_native::process::EnvPolicy {
    env_policy_with(inherit, &Default::default(), items)
}

/// [`env_policy`] with `extra` variables set before the `--env` items.
pub fn env_policy_with(
    inherit: bool,
    extra: &std::collections::BTreeMap<String, String>,
    items: &[String],
) -> acp_native::process::EnvPolicy {
    use acp_native::process::EnvPolicy;
    let mut policy = if inherit {
        EnvPolicy::inherit_all()
    } else {
        EnvPolicy::default()
    };
    for (name, value) in extra {
        policy = policy.var(name, value);
    }
    for item in items {
        policy = match item.split_once('=') {
            Some((name, value)) => policy.var(name, value),
            None => policy.allow(item.as_str()),
        };
    }
    policy
}
