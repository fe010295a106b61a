//! Feeds arbitrary text to `kolo scheduler --config` as a
//! KubeSchedulerConfiguration (YAML or JSON): the file's reader and, for
//! each profile it names, the profile build that decodes every plugin's
//! `pluginConfig` args (LoadAware thresholds, NUMA, coscheduling, quota,
//! reservation, ...). Nothing may panic.
#![no_main]

use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::profile::Profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = SchedulerConfig::from_yaml(text) else { return };
    let registry = registry();
    for profile in config.profiles() {
        let _ = Profile::build(&registry, &profile, DEFAULT_PLUGINS);
    }
});
