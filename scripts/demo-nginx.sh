# The nginx.conf of a demo node (make demo, make demo-cluster), one home
# for both: write_nginx_conf FILE WORKERS KEY_FILE NODE_DIR PORT.
# Needs $root (the repository). Sourced, not run.

write_nginx_conf() {
  local file=$1 workers=$2 key=$3 node=$4 port=$5 user=""
  [ "$(id -u)" -eq 0 ] && user="user nobody nogroup;"
  cat > "$file" <<CONF
$user
load_module $root/build/modules/ngx_http_shortlink_module.so;
worker_processes $workers;
error_log logs/error.log info;
pid logs/nginx.pid;
events { worker_connections 1024; }
http {
    log_format shortlink '\$remote_addr "\$request" \$status \$shortlink_cache_status code=\$shortlink_code id=\$shortlink_id -> \$shortlink_target';
    access_log logs/access.log shortlink;

    shortlink_key_file $key;
    shortlink_zone     zone=links:16m ttl=10m negative_ttl=30s;
    shortlink_pass     unix:$node/ipc.sock;
    shortlink_spool    $node/spool;

    server {
        listen 127.0.0.1:$port;

        location / {
            shortlink on;
        }
        location /api/ {
            proxy_pass http://unix:$node/api.sock;
            proxy_set_header X-Shortlink-Base http://\$host:\$server_port;
            client_max_body_size 32m;
            error_page 413 = @shortlink_api_too_large;
            error_page 502 503 504 = @shortlink_api_unavailable;
        }
        include $root/conf/nginx/shortlink-api-errors.conf;
        location = /metrics {
            allow 127.0.0.1;
            deny all;
            proxy_pass http://unix:$node/api.sock;
        }
        location = /admin {
            return 301 /admin/;
        }
        location /admin/ {
            client_max_body_size 32m;
            proxy_pass http://unix:$node/api.sock;
            proxy_set_header X-Shortlink-Base http://\$host:\$server_port;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Real-IP \$remote_addr;
        }
    }
}
CONF
}
