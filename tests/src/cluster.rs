//! Several nodes on one PostgreSQL for the multi-node tests: a private
//! cluster (`testpg`), and per node its own scratch directory, its own
//! `shortlinkd` on the shared database and its own nginx with the module,
//! every node on the same deployment key.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use shortlink_core::Codec;
use testpg::PgCluster;

use crate::load::{Conn, Load};
use crate::{http_conf, Daemon, Nginx, Response, Scratch};

/// One node: nginx and the daemon it talks to.
pub struct Node {
    pub nginx: Nginx,
    pub daemon: Daemon,
    pub scratch: Scratch,
}

impl Node {
    /// GET `/<code>` through this node's nginx.
    pub fn get(&self, code: &str) -> Response {
        self.nginx.get(format!("/{code}").as_bytes())
    }

    /// Requests each of `codes` once (into this node's zone), adding those
    /// clicks to `sent`.
    pub fn warm(&self, codes: &[String], sent: &mut HashMap<String, u64>) {
        for c in codes {
            assert_eq!(self.get(c).status, 302, "warming {c}");
            *sent.entry(c.clone()).or_default() += 1;
        }
    }
}

/// Fields drop in order: the nodes, then PostgreSQL.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub codec: Codec,
    pub pg: PgCluster,
    /// The synchronous standby of `pg`, if the cluster has one
    /// ([`Cluster::start_replicated`]).
    pub standby: Option<PgCluster>,
    /// The shared database's URL (no password: nodes read it from a file).
    pub url: String,
}

impl Cluster {
    /// Warms `codes` on every node ([`Node::warm`]), then sends them to
    /// every node without end (a keep-alive and a plain connection each,
    /// `pause` between requests) until the loads are stopped.
    pub fn hot_load(
        &self,
        codes: &[String],
        sent: &mut HashMap<String, u64>,
        pause: Duration,
    ) -> Vec<Load> {
        for n in &self.nodes {
            n.warm(codes, sent);
        }
        self.nodes
            .iter()
            .map(|n| {
                Load::start(
                    n.nginx.port,
                    codes,
                    &[(Conn::KeepAlive, 1), (Conn::Plain, 1)],
                    pause,
                )
            })
            .collect()
    }
}

/// The standby's name on its primary (`application_name`).
pub const STANDBY: &str = "standby1";

impl Cluster {
    /// A private PostgreSQL and `n` nodes on one database of it.
    pub fn start(name: &str, n: usize) -> Cluster {
        let pg = PgCluster::start(name);
        let url = pg.create_db("shortlink");
        Self::with_nodes(name, n, pg, None, url, "")
    }

    /// A private primary with a synchronous standby, and `n` nodes whose
    /// URL lists both servers (`target_session_attrs=read-write`: each
    /// daemon uses whichever accepts writes, so a promotion is followed
    /// without a change). `settings` go into each daemon's config file.
    pub fn start_replicated(name: &str, n: usize, settings: &str) -> Cluster {
        let pg = PgCluster::start(name);
        pg.create_db("shortlink");
        let standby = pg.start_standby(STANDBY);
        pg.make_synchronous(STANDBY);
        let url = format!(
            "postgres://{}@127.0.0.1:{},127.0.0.1:{}/shortlink?target_session_attrs=read-write",
            testpg::USER,
            pg.port,
            standby.port
        );
        Self::with_nodes(name, n, pg, Some(standby), url, settings)
    }

    fn with_nodes(
        name: &str,
        n: usize,
        pg: PgCluster,
        standby: Option<PgCluster>,
        url: String,
        settings: &str,
    ) -> Cluster {
        let mut nodes = Vec::new();
        let mut codec = None;
        for i in 0..n {
            let scratch = Scratch::new(&format!("{name}-node{i}"));
            let (key, c) = scratch.key();
            codec = Some(c);
            let config = node_config(&scratch, &url, &pg, settings);
            let daemon = Daemon::start_with_config(&scratch, &key, Some(config));
            let nginx = Nginx::start(
                &scratch,
                1,
                &http_conf(&key, &daemon, crate::stack::TIMEOUT),
            );
            nodes.push(Node {
                nginx,
                daemon,
                scratch,
            });
        }
        Cluster {
            nodes,
            codec: codec.expect("at least one node"),
            pg,
            standby,
            url,
        }
    }
}

/// The edge deadline of every node's daemon: below the nodes' nginx
/// `shortlink_timeout` ([`crate::stack::TIMEOUT`], 300 ms), as the
/// configuration reference asks of every deployment.
pub const EDGE_TIMEOUT_MS: u32 = 200;

/// The daemon's config file naming the shared database.
fn node_config(scratch: &Scratch, url: &str, pg: &PgCluster, settings: &str) -> PathBuf {
    let path = scratch.path("shortlinkd.toml");
    std::fs::write(
        &path,
        format!(
            "database = \"{url}\"\ndatabase_password_file = \"{}\"\n\
             edge_timeout_ms = {EDGE_TIMEOUT_MS}\n{settings}",
            pg.password_file().display()
        ),
    )
    .unwrap();
    path
}
