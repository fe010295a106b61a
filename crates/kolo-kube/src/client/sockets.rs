//! Counting a process's established TCP connections to a port, from
//! `/proc/<pid>/fd` and `/proc/net/tcp{,6}` (Linux): how tests and `kolo
//! bench scheduler` check that a client keeps within its bound.

use std::collections::HashSet;

/// The socket inodes a process holds (`/proc/<pid>/fd/* -> socket:[N]`).
fn socket_inodes(pid: u32) -> std::io::Result<HashSet<u64>> {
    let mut inodes = HashSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // A descriptor closed while listing is simply not counted.
        let Ok(target) = std::fs::read_link(entry?.path()) else { continue };
        let target = target.to_string_lossy();
        if let Some(n) = target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']')) {
            inodes.extend(n.parse::<u64>().ok());
        }
    }
    Ok(inodes)
}

/// The remote port and inode of an established socket in a
/// `/proc/net/tcp` line (`sl local rem st ... uid timeout inode`), if it is
/// one (state `01`).
fn established(line: &str) -> Option<(u16, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 10 || fields[3] != "01" {
        return None;
    }
    let port = u16::from_str_radix(fields[2].rsplit(':').next()?, 16).ok()?;
    Some((port, fields[9].parse().ok()?))
}

/// How many established TCP connections process `pid` has to `port` (on
/// any address; the API server in tests is on loopback).
pub fn established_connections(pid: u32, port: u16) -> std::io::Result<usize> {
    let inodes = socket_inodes(pid)?;
    let mut count = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        // A kernel without IPv6 has no tcp6 table.
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        count += text
            .lines()
            .skip(1)
            .filter_map(established)
            .filter(|(p, inode)| *p == port && inodes.contains(inode))
            .count();
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_established_lines_of_proc_net_tcp() {
        // From a machine's /proc/net/tcp: 127.0.0.1:48146 -> 127.0.0.1:23783
        // (0x5CE7) established, inode 912345; and a listening socket.
        let up = "   3: 0100007F:BC12 0100007F:5CE7 01 00000000:00000000 00:00000000 00000000     0        0 912345 1 0000000000000000 20 4 30 10 -1";
        let listen = "   0: 0100007F:5CE7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11111 1 0000000000000000 100 0 0 10 0";
        assert_eq!(established(up), Some((23783, 912345)));
        assert_eq!(established(listen), None);
        assert_eq!(established("  sl  local_address rem_address   st"), None);
    }

    #[test]
    fn counts_this_process_connections_to_a_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let pid = std::process::id();
        assert_eq!(established_connections(pid, port).unwrap(), 0);
        let a = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let b = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Both ends are ours, but only the client ends have `port` as their
        // remote port.
        let (_a2, _) = listener.accept().unwrap();
        let (_b2, _) = listener.accept().unwrap();
        assert_eq!(established_connections(pid, port).unwrap(), 2);
        drop((a, b));
    }
}
