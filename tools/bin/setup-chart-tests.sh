#!/usr/bin/env bash
# `npm run setup:chart-tests`: what the chart tests need to build helm/render (Go + Debian's Go
# libraries; no helm binary is used). Debian/Ubuntu only; .ci/run runs it too. Without these
# packages the chart tests are skipped with one line (README "Test it").
set -euo pipefail
PACKAGES="golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev golang-github-xeipuuv-gojsonschema-dev golang-github-burntsushi-toml-dev golang-github-gobwas-glob-dev"
if ! command -v apt-get >/dev/null; then
  echo "The chart tests need Debian's Go packages ($PACKAGES); this machine has no apt-get." >&2
  exit 1
fi
missing=""
for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && { echo "chart test packages already installed"; exit 0; }
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
