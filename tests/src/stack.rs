//! The whole product for one test: a key, the daemon and nginx with the
//! module pointed at it.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use shortlink_core::Codec;

use crate::{main_context, Daemon, Nginx, Scratch};

/// The `http{}` body the redirect tests use: the module's directives and a
/// server whose headers expose the module's variables, with the admin UI
/// proxied under `/admin/` like `conf/nginx/short-domains.conf` does, and
/// the edge's figures at `/status`.
pub fn http_conf(key: &Path, daemon: &Daemon, timeout: &str) -> String {
    format!(
        r#"
    shortlink_key_file {key};
    shortlink_zone zone=links:4m ttl=10m negative_ttl=30s;
    shortlink_pass unix:{ipc};
    shortlink_timeout {timeout};
    shortlink_flush_interval 100ms;
    shortlink_spool {spool};
    server {{
        listen 127.0.0.1:{{port}};
        add_header X-Cache $shortlink_cache_status always;
        add_header X-Pid $pid always;
        add_header X-Id $shortlink_id always;
        add_header X-Code $shortlink_code always;
        add_header X-Target $shortlink_target always;
        location = /status {{
            shortlink_status;
        }}
        location / {{
            shortlink on;
        }}
        location /fb/ {{
            shortlink on;
            shortlink_redirect 301;
            shortlink_fallback https://example.com/fallback;
            shortlink_cache_control "private, max-age=90";
        }}
        location /admin/ {{
            client_max_body_size 32m;
            proxy_pass http://unix:{api};
            proxy_set_header X-Shortlink-Base http://$host:$server_port;
            proxy_set_header X-Real-IP $remote_addr;
        }}
    }}"#,
        key = key.display(),
        ipc = daemon.ipc.display(),
        spool = daemon.spool.display(),
        api = daemon.ipc.with_file_name("api.sock").display(),
    )
}

/// Fields drop in order: nginx, then the daemon, then the scratch directory.
pub struct Stack {
    pub nginx: Nginx,
    pub daemon: Daemon,
    pub codec: Codec,
    pub workers: u32,
    pub http: String,
    pub scratch: Scratch,
}

/// The `shortlink_timeout` of a stack started without one.
pub(crate) const TIMEOUT: &str = "300ms";

impl Stack {
    /// Key, daemon and nginx with `workers` workers and `shortlink_timeout` [`TIMEOUT`].
    pub fn start(name: &str, workers: u32) -> Stack {
        Self::start_with_timeout(name, workers, TIMEOUT)
    }

    pub fn start_with_timeout(name: &str, workers: u32, timeout: &str) -> Stack {
        Self::start_edited(name, workers, timeout, |http| http)
    }

    /// As [`Stack::start`], with a zone of `size` (nginx's syntax: `32k`)
    /// instead of 4 MiB.
    pub fn start_with_zone(name: &str, workers: u32, size: &str) -> Stack {
        Self::start_edited(name, workers, TIMEOUT, |http| {
            http.replace("zone=links:4m", &format!("zone=links:{size}"))
        })
    }

    /// As [`Stack::start_with_timeout`], with the `http{}` body passed through `edit`.
    pub fn start_edited(
        name: &str,
        workers: u32,
        timeout: &str,
        edit: impl Fn(String) -> String,
    ) -> Stack {
        let scratch = Scratch::new(name);
        let (key, codec) = scratch.key();
        let daemon = Daemon::start(&scratch, &key);
        let http = edit(http_conf(&key, &daemon, timeout));
        let nginx = Nginx::start(&scratch, workers, &http);
        Stack {
            nginx,
            daemon,
            codec,
            workers,
            http,
            scratch,
        }
    }

    /// The complete nginx.conf in use, with the port filled in.
    pub fn nginx_conf(&self) -> String {
        format!(
            "{}http {{\n    access_log off;\n{}\n}}\n",
            main_context(&self.scratch.dir, self.workers),
            self.http.replace("{port}", &self.nginx.port.to_string())
        )
    }

    /// `nginx -s reload` with the same configuration.
    pub fn reload(&self) {
        self.nginx.reload(&self.nginx_conf());
    }

    /// GET `/<code>` with extra headers.
    pub fn get(&self, code: &str, headers: &[(&str, &str)]) -> crate::Response {
        self.nginx
            .request(b"GET", format!("/{code}").as_bytes(), headers, b"")
    }

    /// The edge's figures (`shortlink_status` at `/status`).
    pub fn figures(&self) -> Figures {
        let r = self.nginx.get(b"/status");
        assert_eq!(r.status, 200, "{}", r.body_text());
        Figures::parse(&r.body_text())
    }

    /// Polls the figures until `ok` holds (at most 10 s); panics naming `what`.
    pub fn until_figures(&self, what: &str, ok: impl Fn(&Figures) -> bool) -> Figures {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let m = self.figures();
            if ok(&m) {
                return m;
            }
            assert!(Instant::now() < deadline, "{what}: {m:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The samples of a `shortlink_status` answer (Prometheus text), by
/// series (`name{labels}`), for the zone `links`.
#[derive(Debug)]
pub struct Figures(pub HashMap<String, u64>);

impl Figures {
    /// Parses the Prometheus text; every sample is `series value`.
    pub fn parse(text: &str) -> Figures {
        Figures(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| {
                    let (series, value) = l.rsplit_once(' ').expect("name value");
                    (series.to_string(), value.parse().expect("integer value"))
                })
                .collect(),
        )
    }

    /// Requests answered with this cache status.
    pub fn requests(&self, status: &str) -> u64 {
        self.0[&format!("shortlink_requests_total{{zone=\"links\",cache_status=\"{status}\"}}")]
    }

    /// A figure without other labels than the zone.
    pub fn gauge(&self, name: &str) -> u64 {
        self.0[&format!("{name}{{zone=\"links\"}}")]
    }
}
