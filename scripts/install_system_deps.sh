#!/usr/bin/env bash
# Installs the Debian packages Polar's sandboxes and reports use, when they are missing.
# Safe to re-run. Without root or apt it says what is missing and carries on: the tests
# that need a missing tool fail with a message naming it.
set -euo pipefail
pkgs=(podman runc bubblewrap uidmap chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "polar: missing system packages: ${missing[*]} (install them with apt-get as root)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
echo "polar: installed ${missing[*]}"
