//! [`NumaTopology`]: NUMA nodes, their physical cores and each core's
//! hardware threads, read from Linux sysfs (`node/node*/cpulist` and
//! `cpu/cpu*/topology/thread_siblings_list`). Used to resolve the `numa:`
//! forms of `system.sharding.cpu_allocation`; when sysfs has no NUMA
//! information the caller passes `None` and every allowed CPU is used.

use std::fs;
use std::path::Path;

/// Where Linux publishes CPU and NUMA topology.
pub const SYSFS_SYSTEM_ROOT: &str = "/sys/devices/system";
const NODE_PREFIX: &str = "node";

/// The machine's NUMA layout.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NumaTopology {
    pub nodes: Vec<NumaNode>,
}

/// One NUMA node: its physical cores, each listing its hardware threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    pub id: usize,
    pub cores: Vec<Vec<usize>>,
}

impl NumaTopology {
    /// Reads the topology below `root` (normally [`SYSFS_SYSTEM_ROOT`]);
    /// `None` when no NUMA node is described there.
    pub fn read(root: &Path) -> Option<Self> {
        let mut nodes = Vec::new();
        for entry in fs::read_dir(root.join(NODE_PREFIX)).ok()?.flatten() {
            let file_name = entry.file_name();
            let Some(id) = file_name
                .to_str()
                .and_then(|name| name.strip_prefix(NODE_PREFIX))
                .and_then(|digits| digits.parse::<usize>().ok())
            else {
                continue;
            };
            let cpus = parse_cpu_list(&fs::read_to_string(entry.path().join("cpulist")).ok()?)?;
            nodes.push(NumaNode {
                id,
                cores: group_into_cores(root, &cpus),
            });
        }
        nodes.sort_by_key(|node| node.id);
        (!nodes.is_empty()).then_some(Self { nodes })
    }
}

/// Groups a node's CPUs by physical core using the sibling lists; a CPU
/// without a readable list is a core of its own.
fn group_into_cores(root: &Path, cpus: &[usize]) -> Vec<Vec<usize>> {
    let mut cores: Vec<Vec<usize>> = Vec::new();
    for &cpu in cpus {
        if cores.iter().any(|threads| threads.contains(&cpu)) {
            continue;
        }
        let siblings_path = root.join(format!("cpu/cpu{cpu}/topology/thread_siblings_list"));
        let siblings = fs::read_to_string(siblings_path)
            .ok()
            .and_then(|text| parse_cpu_list(&text))
            .unwrap_or_default();
        let mut threads: Vec<usize> = siblings
            .into_iter()
            .filter(|sibling| cpus.contains(sibling))
            .collect();
        if !threads.contains(&cpu) {
            threads.push(cpu);
        }
        threads.sort_unstable();
        cores.push(threads);
    }
    cores
}

/// Parses the kernel's CPU list format, e.g. `"0-3,8,10-11"`.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text
        .trim()
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
                if first > last {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_kernel_cpu_lists_when_parsing_should_expand_ranges() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn given_sysfs_tree_when_reading_should_group_threads_into_cores_per_node() {
        let root = tempfile::tempdir().expect("temp dir");
        let write = |path: &str, text: &str| {
            let full = root.path().join(path);
            fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
            fs::write(full, text).expect("write");
        };
        write("node/node0/cpulist", "0-1,4-5\n");
        write("node/node1/cpulist", "2-3\n");
        write("node/possible", "0-1\n");
        for (cpu, siblings) in [
            (0, "0,4"),
            (4, "0,4"),
            (1, "1,5"),
            (5, "1,5"),
            (2, "2"),
            (3, "3"),
        ] {
            write(
                &format!("cpu/cpu{cpu}/topology/thread_siblings_list"),
                siblings,
            );
        }
        let topology = NumaTopology::read(root.path()).expect("topology");
        assert_eq!(
            topology.nodes,
            [
                NumaNode {
                    id: 0,
                    cores: vec![vec![0, 4], vec![1, 5]]
                },
                NumaNode {
                    id: 1,
                    cores: vec![vec![2], vec![3]]
                },
            ]
        );
        assert_eq!(NumaTopology::read(&root.path().join("missing")), None);
    }
}
