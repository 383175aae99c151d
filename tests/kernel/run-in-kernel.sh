#!/bin/bash
# run-in-kernel.sh (the project's own copy of the lane runner): run a command under a real Debian kernel (6.12, bookworm-backports)
# in QEMU. The guest sees the host's root filesystem (9p, read-only, under a tmpfs overlay
# so writes succeed but are thrown away), the host's current directory read-write at the
# same path, /dev/dma_heap/system, /dev/udmabuf and vivid's /dev/video*.
#   usage: run-in-kernel.sh 'shell command'   or   run-in-kernel.sh prog arg...
# Prints the command's stdout+stderr, exits with its exit code (124 timeout, 125 guest failure).
# Env: QLANE_CACHE (~/.cache/qlane), QLANE_TIMEOUT (600 s), QLANE_MEM (2G), QLANE_SMP (2),
#   QLANE_MODULES ('vivid'; ';'-separated modprobe argument lists, e.g. 'vivid multiplanar=2'),
#   QLANE_SUITE (bookworm-backports), QLANE_CWD_RW (1; 0 = cwd writes thrown away too),
#   QLANE_VERBOSE (1 = kernel console to stderr), QLANE_ACCEL (tcg; kvm where nested KVM works).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
CACHE=${QLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qlane}; SUITE=${QLANE_SUITE:-bookworm-backports}
TIMEOUT=${QLANE_TIMEOUT:-600}; MODULES=${QLANE_MODULES-vivid}
mkdir -p "$CACHE"; CACHE=$(cd "$CACHE" && pwd)
case "$CACHE$PWD" in *[[:space:]]*) echo "qlane: no spaces in cache/cwd paths" >&2; exit 2;; esac
log() { echo "qlane: $*" >&2; }
FMT=qlane-1  # bump when the initramfs layout changes

prepare() {  # host tools, kernel package, initramfs; all cached under $CACHE
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need+=(busybox-static)
  command -v depmod >/dev/null || need+=(kmod)
  command -v xz >/dev/null || need+=(xz-utils)
  if [ ${#need[@]} -gt 0 ]; then
    log "apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need[@]}" >&2 ||
      { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${need[@]}" >&2; }
  fi
  [ -z "${QLANE_REFRESH:-}" ] && [ "$(cat "$CACHE/current/ready" 2>/dev/null)" = "$FMT" ] && return 0
  local A="$CACHE/apt" ver
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$CACHE/dl"
  local kr=/usr/share/keyrings/debian-archive-keyring.gpg; [ -e $kr ] && kr="[signed-by=$kr] " || kr=
  # the Debian mirror this machine is already configured with (first "URIs:" or "deb" line naming .../debian)
  local mirror
  mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
           grep -oE '(https?|file):[^ ]*/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
  [ -n "$mirror" ] || { log "no Debian mirror found in the apt sources"; return 1; }
  echo "deb ${kr}${mirror%/} $SUITE main" > "$A/sources.list"
  local o=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
           -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" -o APT::Sandbox::User=root -q)
  apt-get "${o[@]}" update >&2
  ver=$(apt-cache "${o[@]}" depends "linux-image-amd64/$SUITE" | sed -n 's/.*Depends: linux-image-\(.*\)/\1/p' | head -1)
  [ -n "$ver" ] || { log "no linux-image-amd64 in $SUITE"; return 1; }
  local K="$CACHE/k/$ver"
  if [ "$(cat "$K/ready" 2>/dev/null)" != "$FMT" ]; then
    log "fetching kernel linux-image-$ver"
    rm -rf "$K" "$CACHE"/dl/*.deb; mkdir -p "$K/root" "$K/ird/bin" "$K/ird/mod"
    (cd "$CACHE/dl" && apt-get "${o[@]}" download "linux-image-$ver" >&2)
    dpkg-deb -x "$CACHE"/dl/linux-image-"$ver"_*.deb "$K/root"; rm -f "$CACHE"/dl/*.deb
    depmod -b "$K/root" "$ver"
    cp "$K/root/boot/vmlinuz-$ver" "$K/vmlinuz"
    cp /bin/busybox "$K/ird/bin/busybox"
    local m f; : > "$K/ird/mod/order"
    for f in $(for m in 9p 9pnet_virtio overlay; do modprobe -d "$K/root" -S "$ver" --show-depends $m; done |
               awk '$1=="insmod"{print $2}'); do
      m=$(basename "$f"); m=${m%.xz}; grep -qx "$m" "$K/ird/mod/order" && continue
      case "$f" in *.xz) xz -dc "$f" > "$K/ird/mod/$m";; *) cp "$f" "$K/ird/mod/$m";; esac
      echo "$m" >> "$K/ird/mod/order"
    done
    cat > "$K/ird/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin; export PATH=/bin
mkdir -p /proc /sys /dev /lower /rw /newroot
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
for m in $(cat /mod/order); do insmod /mod/$m || echo "qlane: insmod $m failed"; done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /lower
mount -t tmpfs -o mode=755,size=75% rw /rw; mkdir -p /rw/up /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/up,workdir=/rw/work root /newroot ||
  { echo "qlane: overlay failed"; poweroff -f; }
umount /proc /sys /dev
exec switch_root /newroot /bin/bash "$qlane_run/stage2"
EOF
    chmod +x "$K/ird/init"
    (cd "$K/ird" && find . | busybox cpio -o -H newc -R 0:0 2>/dev/null | gzip -1 > "$K/initrd.gz")
    echo "$FMT" > "$K/ready"
  fi
  ln -sfn "k/$ver" "$CACHE/current"
}
exec 9>"$CACHE/lock"; flock 9; prepare; exec 9>&-
K=$(readlink -f "$CACHE/current"); KROOT="$K/root"; KVER=$(basename "$K")

[ "$PWD" = / ] && QLANE_CWD_RW=0
RUN=$(mktemp -d "$CACHE/run.XXXXXX"); TAILPID=
cleanup() { [ -n "$TAILPID" ] && kill "$TAILPID" 2>/dev/null; rm -rf "$RUN"; }
trap cleanup EXIT
{ export -p | grep -vE '^declare -x (PWD|OLDPWD|SHLVL|_)='
  printf 'cd -- %q || exit 125\n' "$PWD"
  if [ $# -eq 1 ]; then printf '%s\n' "$1"; else printf '%q ' "$@"; echo; fi
} > "$RUN/cmd"
cat > "$RUN/stage2" <<EOF
#!/bin/bash
# PID 1 in the guest, running on the host's (overlaid) root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs shm /dev/shm
mount -t tmpfs run /run
ip link set lo up 2>/dev/null || /bin/busybox ip link set lo up
stty -F /dev/hvc0 raw -echo; stty -F /dev/hvc1 raw -echo
IFS=';' read -ra mods <<< $(printf '%q' "$MODULES")
for m in "\${mods[@]}"; do [ -n "\${m// }" ] && { modprobe -d $KROOT -S $KVER \$m 2>/dev/hvc0 || echo "qlane: modprobe \$m failed" >/dev/hvc0; }; done
[ "${QLANE_CWD_RW:-1}" = 1 ] && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap hostcwd $(printf '%q' "$PWD")
bash $RUN/cmd </dev/null 2>&1 | cat >/dev/hvc0
echo "\${PIPESTATUS[0]}" >/dev/hvc1
sync; echo o >/proc/sysrq-trigger; sleep 5
EOF

ACCEL=${QLANE_ACCEL:-tcg}; [ "$ACCEL" = tcg ] && ACCEL=tcg,thread=${QLANE_TCG_THREAD:-single}
CWDFS=(); [ "${QLANE_CWD_RW:-1}" = 1 ] &&
  CWDFS=(-virtfs "local,path=$PWD,mount_tag=hostcwd,security_model=none,multidevs=remap")
touch "$RUN/console" "$RUN/rc"
[ "${QLANE_VERBOSE:-0}" = 1 ] && { tail -n +1 -f "$RUN/console" >&2 & TAILPID=$!; }
set +e
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel "$ACCEL" -cpu max -m "${QLANE_MEM:-2G}" \
  -smp "${QLANE_SMP:-2}" -nodefaults -no-user-config -display none -no-reboot -nic none \
  -kernel "$K/vmlinuz" -initrd "$K/initrd.gz" -serial "file:$RUN/console" \
  -append "console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init qlane_run=$RUN ${QLANE_APPEND:-}" \
  -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
  "${CWDFS[@]}" -device virtio-serial-pci -chardev stdio,id=out -device virtconsole,chardev=out \
  -chardev "file,id=rc,path=$RUN/rc" -device virtconsole,chardev=rc </dev/null & QPID=$!
for sig in INT:130 TERM:143; do trap "kill -TERM \$QPID 2>/dev/null; wait \$QPID; exit ${sig#*:}" "${sig%:*}"; done
wait $QPID; qrc=$?
rc=$(tr -dc 0-9 < "$RUN/rc")
if [ -z "$rc" ]; then
  [ $qrc = 124 ] && log "timed out after ${TIMEOUT}s" || log "guest died (qemu rc $qrc)"
  [ "${QLANE_VERBOSE:-0}" = 1 ] || tail -n 30 "$RUN/console" >&2
  cp "$RUN/console" "$CACHE/last-failed-console.log"
  [ $qrc = 124 ] && exit 124; exit 125
fi
exit "$rc"
