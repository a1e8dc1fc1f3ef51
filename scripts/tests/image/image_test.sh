# The container image that `make image` writes (target/image/msgbench-VERSION.oci.tar), run as a
# user would: under podman where a container runs on this machine, else unpacked (umoci) and run
# under chroot as the image's user, with the image's environment. Each test notes which, and
# why podman was not used when it was not. Needs root, umoci and jq (and podman to use it);
# `make test-image` builds the image first and runs these.
#
# podman is tried as it comes, then with the limits of the calling process (its default raises
# nofile and nproc above them, which a host without CAP_SYS_RESOURCE refuses), then with runc as
# well (crun refuses a host whose cgroups mix v1 and v2). Its storage is private to each test,
# in $SCRATCH, and the container shares the host's network, as the chroot does: the agent test
# reaches a server on the host's loopback. MSGBENCH_IMAGE_RUNNER=chroot skips podman, to test the
# other way where podman works.

# Sets VERSION (the host's release build's), ARCHIVE and IMAGE_REF, and fails when the archive
# is missing.
image_archive() {
  local host_bin="$ROOT/target/release/msgbench"
  [ -x "$host_bin" ] || fail "no $host_bin: run make image"
  VERSION="$("$host_bin" --version | awk '{print $2}')"
  ARCHIVE="$ROOT/target/image/msgbench-$VERSION.oci.tar"
  IMAGE_REF="msgbench:$VERSION"
  [ -f "$ARCHIVE" ] || fail "no $ARCHIVE: run make image"
  [ "$(id -u)" = 0 ] || fail "the image tests need root (chroot, or podman's storage); run them as root"
  command -v jq >/dev/null 2>&1 || fail "jq not found (apt-get install jq)"
}

# Unpacks the image into $SCRATCH/bundle (rootfs/ and the runtime config.json umoci derives
# from the image's config: entrypoint, environment, user).
image_unpack() {
  command -v umoci >/dev/null 2>&1 || fail "umoci not found (apt-get install umoci)"
  mkdir -p "$SCRATCH/oci"
  tar -xf "$ARCHIVE" -C "$SCRATCH/oci"
  timeout 120 umoci unpack --image "$SCRATCH/oci:$IMAGE_REF" "$SCRATCH/bundle" >/dev/null
  rm -rf "$SCRATCH/oci"
}

# Removes what podman left in $SCRATCH: containers, and the mounts of one that failed to start.
image_cleanup() {
  if [ "${RUNNER:-}" = podman ] || [ -d "$SCRATCH/podman" ]; then
    timeout 60 "${PODMAN[@]}" rm -a -f >/dev/null 2>&1 || true
    findmnt -rn -o TARGET | grep "^$SCRATCH/" | sort -r | xargs -r umount -l || true
  fi
}

# Chooses how to run the image: sets RUNNER to podman (with PODMAN_RUN, its command up to the
# image) or chroot (after image_unpack), and writes one note saying which. Sets an EXIT trap that
# calls image_cleanup; a test with a trap of its own calls it from there.
image_runner() {
  image_archive
  local tried="" why opts
  if [ "${MSGBENCH_IMAGE_RUNNER:-}" = chroot ]; then
    tried="MSGBENCH_IMAGE_RUNNER=chroot"
  elif command -v podman >/dev/null 2>&1; then
    trap image_cleanup EXIT
    PODMAN=(podman --root "$SCRATCH/podman/root" --runroot "$SCRATCH/podman/run"
      --tmpdir "$SCRATCH/podman/tmp" --storage-driver vfs --events-backend none)
    timeout 120 "${PODMAN[@]}" load -q -i "$ARCHIVE" >/dev/null
    local limits="--ulimit nofile=$(ulimit -Sn):$(ulimit -Hn) --ulimit nproc=4096:4096"
    local candidates=("" "$limits")
    if command -v runc >/dev/null 2>&1; then
      candidates+=("--runtime runc $limits")
    fi
    for opts in "${candidates[@]}"; do
      # The runtime flag belongs to podman, the others to `run`.
      local global=() run=()
      # shellcheck disable=SC2206 # words on purpose
      local words=($opts)
      while [ "${#words[@]}" -gt 0 ]; do
        if [ "${words[0]}" = --runtime ]; then
          global+=("${words[@]:0:2}")
        else
          run+=("${words[@]:0:2}")
        fi
        words=("${words[@]:2}")
      done
      PODMAN_RUN=("${PODMAN[@]}" "${global[@]}" run --rm --network host "${run[@]}")
      # Without CAP_SYS_RESOURCE the runtime can set no limit above its own, and podman runs
      # with nproc at most 32768 whatever its caller has: the caller's nproc is lowered to the
      # 4096 the container asks for (lowering needs no privilege), so the two agree.
      if why="$(ulimit -u 4096 && timeout 60 "${PODMAN_RUN[@]}" "localhost/$IMAGE_REF" --version 2>&1)"; then
        RUNNER=podman
        # From here on for every podman run, as for the probe.
        ulimit -u 4096
        echo "image run under podman${opts:+ ($opts)}${tried:+; before that: $tried}" >>"$NOTES"
        return 0
      fi
      tried="${tried:+$tried; }[${opts:-defaults}] $(echo "$why" | tail -n 1)"
    done
  else
    tried="podman not installed"
  fi
  image_unpack
  RUNNER=chroot
  echo "image run unpacked under chroot as its user, not under podman: $tried" >>"$NOTES"
}

# image_cmd SECONDS [-v HOST_FILE:IMAGE_PATH]... ARGS...: sets IMAGE_CMD to the command that runs
# the image's entrypoint with ARGS for at most SECONDS. -v puts a file into the container
# (read-only under podman, a copy in the unpacked root under chroot). Run in the background as
# `"${IMAGE_CMD[@]}" &`, $! is that command's own process, to stop.
image_cmd() {
  local seconds="$1" mounts=()
  shift
  while [ "${1:-}" = -v ]; do
    mounts+=("$2")
    shift 2
  done
  if [ "$RUNNER" = podman ]; then
    local vols=() m
    for m in "${mounts[@]}"; do
      vols+=(-v "$m:ro")
    done
    IMAGE_CMD=(timeout "$seconds" "${PODMAN_RUN[@]}" "${vols[@]}" "localhost/$IMAGE_REF" "$@")
    return
  fi
  local rootfs="$SCRATCH/bundle/rootfs" config="$SCRATCH/bundle/config.json" m
  for m in "${mounts[@]}"; do
    mkdir -p "$rootfs$(dirname "${m#*:}")"
    cp "${m%%:*}" "$rootfs${m#*:}"
    chmod 0644 "$rootfs${m#*:}"
  done
  local uid gid env=() cmd=()
  uid="$(jq -r '.process.user.uid' "$config")"
  gid="$(jq -r '.process.user.gid' "$config")"
  mapfile -t env < <(jq -r '.process.env[]' "$config")
  mapfile -t cmd < <(jq -r '.process.args[]' "$config")
  mkdir -p "$rootfs/proc" "$rootfs/dev"
  # A mount namespace of its own: /proc and /dev, which a runtime would provide, vanish with
  # the process, and nothing is mounted on the host. The environment is the image's alone.
  # Each step execs the next, so the process started is the entrypoint's in the end.
  IMAGE_CMD=(timeout "$seconds" unshare --mount --propagation private -- sh -c
    'r="$1" && shift && mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && exec env -i "$@"'
    sh "$rootfs" "${env[@]}" "$(command -v chroot)" --userspec="$uid:$gid" "$rootfs" "${cmd[@]}" "$@")
}

# image_run SECONDS [-v HOST_FILE:IMAGE_PATH]... ARGS...: image_cmd's command, run; its stdout
# and stderr are ours.
image_run() {
  image_cmd "$@"
  "${IMAGE_CMD[@]}"
}

test_image_config_user_certs_and_size() {
  image_archive
  image_unpack
  local config="$SCRATCH/bundle/config.json" rootfs="$SCRATCH/bundle/rootfs"
  [ "$(jq -c '.process.args' "$config")" = '["/usr/local/bin/msgbench"]' ] ||
    fail "entrypoint is $(jq -c '.process.args' "$config")"
  [ "$(jq -c '.process.user | [.uid, .gid]' "$config")" = '[10001,10001]' ] ||
    fail "user is $(jq -c '.process.user' "$config"), want 10001:10001"
  grep -qx 'msgbench:x:10001:10001:msgbench:/home/msgbench:/usr/sbin/nologin' "$rootfs/etc/passwd" ||
    fail "/etc/passwd lacks the user msgbench: $(cat "$rootfs/etc/passwd")"
  jq -r '.process.env[]' "$config" | grep -qx 'HOME=/home/msgbench' || fail "HOME is not /home/msgbench"
  [ "$(stat -c %u:%g "$rootfs/home/msgbench")" = 10001:10001 ] ||
    fail "/home/msgbench belongs to $(stat -c %u:%g "$rootfs/home/msgbench")"
  [ "$(stat -c %a "$rootfs/tmp")" = 1777 ] || fail "/tmp has mode $(stat -c %a "$rootfs/tmp")"
  local certs
  certs="$(grep -c 'BEGIN CERTIFICATE' "$rootfs/etc/ssl/certs/ca-certificates.crt" || true)"
  [ "$certs" -ge 50 ] || fail "the CA bundle holds $certs certificates"
  [ -x "$rootfs/usr/local/bin/nats-server" ] || fail "no nats-server in the image"
  local compressed unpacked
  compressed="$(stat -c %s "$ARCHIVE")"
  unpacked="$(du -sb "$rootfs" | awk '{print $1}')"
  echo "image $IMAGE_REF: $(numfmt --to=iec-i --suffix=B "$compressed") archive, $(numfmt --to=iec-i --suffix=B "$unpacked") unpacked; $certs CA certificates" >>"$NOTES"
}

test_image_version_is_the_host_build() {
  image_runner
  capture image_run 60 --version
  expect_status 0
  [ "$OUT" = "$("$ROOT/target/release/msgbench" --version)" ] ||
    fail "the image says '$OUT', the host's release build '$("$ROOT/target/release/msgbench" --version)'"
}

test_image_pub_against_its_embedded_server() {
  image_runner
  capture image_run 120 pub --msgs 10k
  expect_status 0
  expect_output "(nats-server 2.15.2, embedded)"
  expect_output "10,000 msgs in"
  expect_output "Delivery: 10,000 sent"
}

test_image_agent_runs_a_plan_signed_on_the_host() {
  image_runner
  local host_bin="$ROOT/target/release/msgbench"
  # Globals: the trap runs after this function has returned.
  server_pid=""
  agent_pid=""
  # shellcheck disable=SC2317 # called by the trap
  # SIGTERM (timeout passes it on; podman passes it into the container), then SIGKILL to what
  # has not ended after 10 s; podman's leftovers go with image_cleanup.
  stop() {
    local pid i
    for pid in $agent_pid $server_pid; do
      kill "$pid" 2>/dev/null || true
    done
    for pid in $agent_pid $server_pid; do
      for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    image_cleanup
  }
  trap stop EXIT

  mkdir -p "$SCRATCH/ports"
  nats-server -a 127.0.0.1 -p -1 --ports_file_dir "$SCRATCH/ports" >"$SCRATCH/server.log" 2>&1 &
  server_pid=$!
  local url="" i
  for i in $(seq 100); do
    url="$(cat "$SCRATCH"/ports/*.ports 2>/dev/null | jq -r '.nats[0] // empty' 2>/dev/null || true)"
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || fail "the host's nats-server wrote no ports file: $(cat "$SCRATCH/server.log")"

  local key
  key="$(timeout 30 "$host_bin" agent keygen --out "$SCRATCH/coordinator.nk" 2>/dev/null | tail -n 1)"
  [[ "$key" =~ ^U[A-Z0-9]{55}$ ]] || fail "keygen printed '$key', not a public key"
  echo "$key" >"$SCRATCH/trusted.keys"

  image_cmd 300 -v "$SCRATCH/trusted.keys:/etc/msgbench/trusted.keys" \
    agent --control "$url" --name image-agent --trust-file /etc/msgbench/trusted.keys
  "${IMAGE_CMD[@]}" >"$SCRATCH/agent.log" 2>&1 &
  agent_pid=$!
  for i in $(seq 300); do
    grep -q 'agent image-agent: listening' "$SCRATCH/agent.log" && break
    kill -0 "$agent_pid" 2>/dev/null || fail "the agent in the image exited: $(cat "$SCRATCH/agent.log")"
    sleep 0.1
  done
  grep -q 'agent image-agent: listening' "$SCRATCH/agent.log" ||
    fail "the agent in the image did not start listening: $(cat "$SCRATCH/agent.log")"

  capture timeout 120 "$host_bin" pub --msgs 10k --server "$url" --agents 1 \
    --sign "$SCRATCH/coordinator.nk" --json "$SCRATCH/result.json"
  expect_status 0
  expect_output "Agents: image-agent (1 pub"
  [ "$(jq -r '.agents.agents[0].name // .agents[0].name // empty' "$SCRATCH/result.json" 2>/dev/null)" = image-agent ] ||
    fail "the result names no agent image-agent: $(jq -c '.agents' "$SCRATCH/result.json" | head -c 400)"
  grep -q 'agent image-agent: accepted plan' "$SCRATCH/agent.log" ||
    fail "the agent logged no accepted plan: $(cat "$SCRATCH/agent.log")"
}
