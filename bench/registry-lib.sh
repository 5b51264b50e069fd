# Sourced by the bench scripts that need a registry (registry.sh, seed.sh, vendor.sh):
# start_registry DIR starts Debian's docker-registry on 127.0.0.1 with an ephemeral port,
# storage under DIR/storage, and waits until it accepts connections. It sets $addr
# (127.0.0.1:PORT) and $reg (its pid), and stops it when the script exits.
# With a second argument `accesslog`, the registry also logs every request (Apache's combined
# format, with the bytes sent) to DIR/registry.log.
start_registry() {
  local dir=$1 port access=true
  [ "${2:-}" = accesslog ] && access=false
  command -v docker-registry > /dev/null ||
    { echo "start_registry: docker-registry is not installed (apt-get install docker-registry, or run scripts/test.sh once)" >&2; exit 1; }
  mkdir -p "$dir/storage"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  addr=127.0.0.1:$port
  cat > "$dir/config.yml" <<YML
version: 0.1
log: { level: error, accesslog: { disabled: $access } }
storage: { filesystem: { rootdirectory: $dir/storage } }
http: { addr: $addr, secret: bench }
YML
  docker-registry serve "$dir/config.yml" > "$dir/registry.log" 2>&1 &
  reg=$!
  trap 'kill $reg 2>/dev/null || true' EXIT
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return 0; sleep 0.1; done
  echo "start_registry: docker-registry did not listen on $addr within 10 s; its log:" >&2
  cat "$dir/registry.log" >&2
  exit 1
}
