//! Shard specs from the resolved CPU list (`system.sharding.cpu_allocation`
//! is parsed and resolved by the configuration), and the process's allowed
//! CPU set, read with `sched_getaffinity` so cpusets and `taskset` are
//! respected.

use std::collections::BTreeSet;

/// One shard: its id and the CPU it is pinned to, if pinning is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSpec {
    pub id: u16,
    pub cpu: Option<usize>,
}

/// One shard per resolved CPU, in order.
pub fn specs(cpus: &[usize], pin: bool) -> Vec<ShardSpec> {
    assert!(
        !cpus.is_empty(),
        "configuration validation guarantees at least one shard"
    );
    cpus.iter()
        .enumerate()
        .map(|(id, &cpu)| ShardSpec {
            id: u16::try_from(id).expect("fewer than 65536 shards"),
            cpu: pin.then_some(cpu),
        })
        .collect()
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> BTreeSet<usize> {
    // SAFETY: `set` is a plain bitmask that sched_getaffinity fills; the size
    // passed is its exact size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    let from_mask: BTreeSet<usize> = if ok {
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    } else {
        BTreeSet::new()
    };
    if from_mask.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n).collect()
    } else {
        from_mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_cpus_when_building_specs_should_number_shards_and_pin_on_request() {
        assert_eq!(
            specs(&[2, 3], true),
            vec![
                ShardSpec {
                    id: 0,
                    cpu: Some(2)
                },
                ShardSpec {
                    id: 1,
                    cpu: Some(3)
                }
            ]
        );
        assert_eq!(specs(&[0], false), vec![ShardSpec { id: 0, cpu: None }]);
    }

    #[test]
    fn given_this_machine_when_reading_allowed_cpus_should_find_some() {
        assert!(!allowed_cpus().is_empty());
    }
}
