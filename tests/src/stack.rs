//! The whole product for one test: a key, the daemon and nginx with the
//! module pointed at it.

use std::path::Path;

use shortlink_core::Codec;

use crate::{main_context, Daemon, Nginx, Scratch};

/// The `http{}` body the redirect tests use: the module's directives and a
/// server whose headers expose the module's variables, with the admin UI
/// proxied under `/admin/` like `conf/nginx/short-domains.conf` does.
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

impl Stack {
    /// Key, daemon and nginx with `workers` workers and `shortlink_timeout 300ms`.
    pub fn start(name: &str, workers: u32) -> Stack {
        Self::start_with_timeout(name, workers, "300ms")
    }

    pub fn start_with_timeout(name: &str, workers: u32, timeout: &str) -> Stack {
        Self::start_edited(name, workers, timeout, |http| http)
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
}
