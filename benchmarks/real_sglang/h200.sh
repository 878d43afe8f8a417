#!/usr/bin/env bash
# Real SGLang on the lent H200: the tool's own commands, end to end, against the tiny models.
#
#   bash benchmarks/real_sglang/h200.sh PART...   (from the repo root, on the H200)
#
# PARTs, run in order: trials (doctor + three trials), oom (a trial with the GPU taken),
# flags (the real parser's flag table, benchmarks/real_sglang/dump_flags.py), sweep
# (TRIALS=8 by default, local runner), profile (export the sweep's pick, serve it, verify),
# dspark (doctor + a speculation-off and a DSPARK trial on the tiny dense Qwen3 with its
# DSpark draft, the full /server_info kept by info_tap.py), dspark-rules (SGLang's own DSPARK
# resolution: two refusals and one launch with steps/top-k to override and no block size),
# serve-verify (serve the exported profile in PROFILE, default the profile part's, and run
# tuner verify --log on it), init (tuner init on each tiny model in INIT_MODELS, default
# qwen3moe dsv3 qwen3next, against the installed SGLang: the spaces in $WORK/init), init-controls
# (the generated baselines' argv without the --attention-backend init added: SGLang's own
# pick on the H200, expected to fail for want of FA3), init-sweep (a sweep of each generated
# space as written, for each model in SWEEP_MODELS (default INIT_MODELS): TRIALS_<model>,
# default 5, HOURS 0.1, synthetic workload, no final accuracy sample; tuner report and
# report --json), init-queue (the items of INIT_QUEUE in order, each only when its estimated
# time still fits before DEADLINE (epoch seconds; none: no limit): `sweep:MODEL:N` sweeps the
# generated space of MODEL as init-sweep does, to N launches in all (a second item of the same
# model resumes its study), `trial:MODEL:NAME:KNOB=V,KNOB=V` runs `tuner trial` of that space
# with those --set values; estimates LAUNCH_S seconds a launch, LAUNCH_S_<model> for one model;
# the version line is printed once per $WORK), init-oom-probe (the generated baseline of
# OOM_MODEL launched by hand at OOM_FRACTION, above init's bound: where the memory went).
# sweep and profile take the space in SWEEP_SPACE (default: the tiny Qwen3-MoE's). The init
# parts write for the machine profile in MACHINE (default: h100 when nvidia-smi names an H100,
# else h200); their spaces are $WORK/init/MODEL-MACHINE.yaml.
#
# Needs the H200 kit's wheels (SGLang 0.5.17 and what the image lacks) in $KIT/p1 and
# $KIT/p2 and the tuner's own missing dependencies (optuna, sqlalchemy, alembic, mako,
# colorlog, greenlet) in $KIT/deps; docs/real-sglang-h200.md says how they get there.
# Everything is written under $WORK; a tarball of it and a log land in $OUT.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 trials|oom|flags|sweep|profile|dspark|dspark-rules ..."; exit 2; }
PARTS=("$@")
KIT=${KIT:-/tmp/kit}; SITE=${SITE:-/tmp/site}; MODELS=/tmp/tuner-tiny
OUTD=${OUT:-/tmp/out}; WORK=/tmp/work; mkdir -p "$OUTD" "$WORK"
LOG=$OUTD/h200.log
# the machine profile `tuner init` writes for (MACHINE; default: the card nvidia-smi names)
MC=${MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 \
  | grep -q H100 && echo h100 || echo h200)}
say() { echo "== $*" | tee -a "$LOG"; }

if [ ! -f "$SITE/.ok" ]; then
  [ -d "$KIT/p1" ] && [ -d "$KIT/p2" ] || { say "NEED_KIT: $KIT/p1 and $KIT/p2 missing"; exit 3; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$KIT"/p1/*.whl "$KIT"/p2/*.whl "$KIT"/deps/*.whl || exit 4
  # sglang 0.5.17's NGRAM source uses size_t without <cstddef>
  H=$SITE/sglang/kernels/jit/csrc/ngram_corpus/result.h
  grep -q cstddef "$H" || sed -i 's/#include <cstdint>/#include <cstddef>\n#include <cstdint>/' "$H"
  touch "$SITE/.ok"
fi
export PYTHONPATH=$SITE:$PWD PATH=$SITE/bin:$PATH PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export TVM_FFI_CACHE_DIR=$KIT/cache/tvm-ffi TRITON_CACHE_DIR=$KIT/cache/triton \
  FLASHINFER_WORKSPACE_BASE=$KIT/cache
mkdir -p "$TVM_FFI_CACHE_DIR"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
tuner() { python3 -c 'import sys; sys.argv[0] = "tuner"; from tuner.cli.main import main; main()' "$@"; }
[ -f $WORK/.versions ] || python3 -c 'import sys, torch, sglang, transformers; print(sys.version.split()[0], "torch",
torch.__version__, torch.cuda.get_device_name(0),
round(torch.cuda.get_device_properties(0).total_memory / 2**30, 2), "GiB", "sglang", sglang.__version__,
"transformers", transformers.__version__)' > $WORK/.versions 2>&1
tee -a "$LOG" < $WORK/.versions
say "machine profile: $MC"

# the tiny models the parts need (TINY: which; default all)
for m in ${TINY:-qwen3moe dsv3 qwen3}; do
  [ -f $MODELS/$m/config.json ] && continue
  case $m in
    qwen3moe) set -- --arch qwen3_moe ;;
    dsv3) set -- --arch deepseek_v3 --hidden 512 ;;
    qwen3next) set -- --arch qwen3_next --layers 4 ;;
    # a dense Qwen3 target (4 layers: the draft reads layers 1 and 2) and its DSpark draft
    qwen3) set -- --arch qwen3 --layers 4 --dspark-draft $MODELS/qwen3-dspark \
      --dspark-block-size 4 ;;
  esac
  python3 benchmarks/real_sglang/make_tiny.py $MODELS/$m "$@" 2>&1 \
    | grep -E "saved|added|Error" | tee -a "$LOG"
done
set -- "${PARTS[@]}"

QWEN=search_spaces/tiny-qwen3moe-h200.yaml; DSV3=search_spaces/tiny-dsv3-h200.yaml
DSPK=search_spaces/tiny-qwen3-dspark-h200.yaml
SW=${SWEEP_SPACE:-$QWEN}; SWN=$(basename "$SW" .yaml)
summary() {  # one line per TrialResult JSON
  python3 - "$@" <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception as exc:
        print(path, "unreadable", exc); continue
    a = r.get("aggregates") or {}
    ci = a.get("tpot_ci95") or {}
    print(path.split("/")[-1], r["status"], r.get("reason"), "version", r.get("engine_version"),
          "tpot_ms", a.get("tpot_ms"), "ci95", [ci.get("low"), ci.get("high")],
          "accept", a.get("accept_length"), "startup_s", (r.get("timings") or {}).get("startup_s"),
          "effect", [(c["knob"], c["verdict"]) for c in r.get("effect") or []],
          "msg", (r.get("message") or "")[:300])
PY
}
T="--engine sglang --startup-timeout 400 --workdir $WORK/runs"
launched() {  # TrialResults a model's init sweep has written so far
  grep -l '"tuner_version"' $WORK/init-artifacts-$1/* 2>/dev/null | wc -l
}
init_sweep() {  # MODEL TRIALS: sweep tuner init's space of MODEL as written, then its reports
  local m=$1 n=$2 S=$WORK/init/$1-$MC.yaml N=$1-$MC DB="sqlite:///$WORK/init-$1.db"
  say "sweep $N: $n trials, synthetic workload"
  tuner sweep $S $T --trials $n --hours ${HOURS:-0.1} --ray-address none --seed 1 \
    --workload synthetic --questions ${QUESTIONS:-6} --final-questions 0 --storage "$DB" \
    --artifacts $WORK/init-artifacts-$m 2>&1 | tee -a "$LOG"
  echo ${PIPESTATUS[0]} > $WORK/init/sweep-$m.rc; say "sweep $N exit $(cat $WORK/init/sweep-$m.rc)"
  say "report $N"; COLUMNS=160 tuner report $N --storage "$DB" 2>&1 | tee -a "$LOG"
  tuner report $N --storage "$DB" --json > $WORK/init/report-$m.json 2>&1
  summary $(grep -l '"tuner_version"' $WORK/init-artifacts-$m/* 2>/dev/null)
  tar czf "$OUTD/work.tgz" -C "$WORK" . 2>/dev/null
}
for PART in "$@"; do
  say "part: $PART"
  case $PART in
trials)
  say "doctor"; tuner doctor $QWEN --engine sglang 2>&1 | tee -a "$LOG"
  say "trial: dsv3 baseline";  tuner trial $DSV3 $T --out $WORK/trial-dsv3-baseline.json >>"$LOG" 2>&1
  say "trial: dsv3 NEXTN 2/1"; tuner trial $DSV3 $T --no-check-engine --set speculative=NEXTN \
    --set spec_steps=2 --set spec_topk=1 --out $WORK/trial-dsv3-nextn.json >>"$LOG" 2>&1
  say "trial: qwen3moe NGRAM 4"; tuner trial $QWEN $T --no-check-engine --set speculative=NGRAM \
    --set ngram_draft_tokens=4 --out $WORK/trial-qwen3moe-ngram.json >>"$LOG" 2>&1
  summary $WORK/trial-dsv3-*.json $WORK/trial-qwen3moe-ngram.json
  ;;
oom)
  say "trial: qwen3moe with all but 512 MiB of the GPU taken (out of memory)"
  # With --max-total-tokens the pool is sized by the cap, not the fraction: a too-large
  # fraction alone starts (docs/real-sglang-h200.md); leave the server no memory instead.
  python3 -c 'import time, torch; free, _ = torch.cuda.mem_get_info(); x = torch.empty(free - 2**29, dtype=torch.uint8, device="cuda"); print("hog", x.numel() >> 30, "GiB", flush=True); time.sleep(600)' &
  HOG=$!; sleep 20
  tuner trial $QWEN --engine sglang --startup-timeout 200 --workdir $WORK/runs --no-check-engine \
    --set mem_fraction=0.5 --out $WORK/trial-qwen3moe-oom.json >>"$LOG" 2>&1
  kill $HOG; wait $HOG 2>/dev/null
  summary $WORK/trial-qwen3moe-oom.json
  ;;
flags)
  python3 benchmarks/real_sglang/dump_flags.py > $OUTD/flags-$(python3 -c 'import importlib.metadata as m; print(m.version("sglang"))').json 2>>"$LOG"
  say "flags exit $?"
  ;;
sweep)
  say "sweep: ${TRIALS:=8} trials, local runner"
  tuner sweep $SW $T --trials $TRIALS --hours ${HOURS:-0.1} --ray-address none --seed 1 \
    --storage "sqlite:///$WORK/tiny.db" --artifacts $WORK/artifacts 2>&1 | tee -a "$LOG"
  DB="sqlite:///$WORK/tiny.db"
  say "report"; COLUMNS=160 tuner report $SWN --storage "$DB" 2>&1 | tee -a "$LOG"
  tuner report $SWN --storage "$DB" --json > $WORK/report.json 2>&1
  ;;
profile)
  DB="sqlite:///$WORK/tiny.db"
  # a tiny model's TPOT moves 4.2-5.9 ms from launch to launch (docs/real-sglang-h200.md):
  # the bound allows that spread, the default 15% does not
  say "export"; tuner export $SWN --storage "$DB" --artifacts $WORK/artifacts \
    --pick fastest --tpot-tolerance ${TPOT_TOLERANCE:-0.5} --out $WORK/profile 2>&1 | tee -a "$LOG"
  ;;&
profile|serve-verify)
  # PROFILE: an exported profile folder (default: the one the profile part wrote)
  PROFILE=${PROFILE:-$WORK/profile}
  say "serve the profile $PROFILE and verify it"
  # its own session: the whole server tree is stopped by process group, nothing else
  PORT=30123 setsid bash $PROFILE/launch.sh > $WORK/profile-server.log 2>&1 &
  SERVER=$!
  for i in $(seq 1 240); do
    python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:30123/health', timeout=2)" 2>/dev/null && break
    kill -0 $SERVER 2>/dev/null || break
    sleep 1
  done
  say "ready after ${i}s"; tail -3 $WORK/profile-server.log | tee -a "$LOG"
  COLUMNS=160 tuner verify $PROFILE/profile.yaml --url http://127.0.0.1:30123 \
    --log $WORK/profile-server.log 2>&1 | tee -a "$LOG"
  say "verify exit ${PIPESTATUS[0]}"
  kill -TERM -- -$SERVER 2>/dev/null; sleep 5; kill -KILL -- -$SERVER 2>/dev/null
  [ "$PART" = profile ] && summary $(grep -l '"tuner_version"' $WORK/artifacts/* 2>/dev/null)
  ;;
dspark)
  say "doctor"; tuner doctor $DSPK --engine sglang 2>&1 | tee -a "$LOG"
  python3 benchmarks/real_sglang/info_tap.py $WORK/info & TAP=$!
  say "trial: qwen3 speculation off"; tuner trial $DSPK $T --no-check-engine \
    --out $WORK/trial-qwen3-baseline.json >>"$LOG" 2>&1
  say "trial: qwen3 DSPARK gamma 4"; tuner trial $DSPK $T --no-check-engine \
    --set speculative=DSPARK --set dspark_block_size=4 --out $WORK/trial-qwen3-dspark.json \
    >>"$LOG" 2>&1
  kill $TAP; wait $TAP 2>/dev/null
  summary $WORK/trial-qwen3-*.json
  grep -h -E "DSpark|dspark|Max running|gamma" $WORK/runs/*.log 2>/dev/null | cut -c1-400 \
    | sort | uniq -c | tee -a "$LOG"
  ls $WORK/info | tee -a "$LOG"
  ;;
dspark-rules)
  # SGLang's own DSPARK resolution, outside the tool: what the tool's rules
  # (tuner/engines/_sglang_block_draft.py) say it does, seen on the real server
  FIX="--model-path $MODELS/qwen3 --attention-backend triton --sampling-backend pytorch
    --grammar-backend none --mm-feature-transport cpu --disable-flashinfer-autotune
    --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled
    --max-total-tokens 65536 --context-length 2048 --mem-fraction-static 0.4"
  D="--speculative-algorithm DSPARK --speculative-draft-model-path $MODELS/qwen3-dspark"
  mkdir -p $WORK/rules
  say "rule: draft tokens given and != gamma + 1 (expect the ValueError)"
  timeout 150 sglang serve $FIX $D --speculative-dspark-block-size 4 \
    --speculative-num-draft-tokens 3 --port 30131 > $WORK/rules/mismatch.log 2>&1
  say "exit $?"; grep -E "Error" $WORK/rules/mismatch.log | tail -2 | tee -a "$LOG"
  say "rule: DSPARK without a draft path (expect the ValueError)"
  timeout 150 sglang serve $FIX --speculative-algorithm DSPARK --port 30132 \
    > $WORK/rules/no-draft.log 2>&1
  say "exit $?"; grep -E "Error" $WORK/rules/no-draft.log | tail -2 | tee -a "$LOG"
  say "rule: steps 3 / top-k 2 overridden, gamma from the checkpoint, max running unset"
  setsid sglang serve $FIX $D --speculative-num-steps 3 --speculative-eagle-topk 2 \
    --port 30133 > $WORK/rules/forced.log 2>&1 &
  SERVER=$!
  for i in $(seq 1 200); do
    python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:30133/health', timeout=2)" 2>/dev/null && break
    kill -0 $SERVER 2>/dev/null || break
    sleep 1
  done
  say "ready after ${i}s"
  python3 -c "import json, urllib.request as u; print(json.dumps(json.load(u.urlopen('http://127.0.0.1:30133/server_info')), indent=1, sort_keys=True, default=str))" > $WORK/rules/forced-server-info.json 2>&1
  python3 - $WORK/rules/forced-server-info.json <<'PY' 2>&1 | tee -a "$LOG"
import json, sys
i = json.load(open(sys.argv[1]))
print({k: i.get(k) for k in ("speculative_algorithm", "speculative_num_steps",
      "speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_dspark_block_size",
      "max_running_requests", "speculative_draft_model_path", "max_total_num_tokens")})
PY
  grep -E "DSpark|dspark|Max running|overriding" $WORK/rules/forced.log | cut -c1-400 | tee -a "$LOG"
  kill -TERM -- -$SERVER 2>/dev/null; sleep 5; kill -KILL -- -$SERVER 2>/dev/null
  ;;
init)
  INIT=$WORK/init; mkdir -p $INIT
  for m in ${INIT_MODELS:-qwen3moe dsv3 qwen3next}; do
    say "tuner init $m"
    tuner init $MODELS/$m --machine $MC --out $INIT/$m-$MC.yaml --force 2>&1 | tee -a "$LOG"
    cp $MODELS/$m/config.json $INIT/$m-config.json
    python3 -c 'import sys; from safetensors import safe_open
ks = list(safe_open(sys.argv[1] + "/model.safetensors", "pt").keys())
print(sys.argv[1], len(ks), "tensors,", sum(k.startswith("mtp.") for k in ks), "mtp.*")' \
      $MODELS/$m 2>&1 | tee -a "$LOG"
    tuner plan $INIT/$m-$MC.yaml 2>&1 | sed -n 1,4p | tee -a "$LOG"
  done
  ;;
init-controls)
  # SGLang's own attention pick (no --attention-backend) with the kit's sglang-kernel
  n=0; PIDS=""
  for m in qwen3moe dsv3; do
    n=$((n + 1))
    tuner plan $WORK/init/$m-$MC.yaml --port $((30140 + n)) --json > $WORK/init/plan-$m.json
    python3 - $WORK/init/plan-$m.json > $WORK/init/control-$m.argv <<'PY'
import json, sys
argv = json.load(open(sys.argv[1]))["argv"]
i = argv.index("--attention-backend")
print("\n".join(argv[:i] + argv[i + 2:]))
PY
    mapfile -t ARGV < $WORK/init/control-$m.argv
    say "control $m: ${ARGV[*]}"
    setsid "${ARGV[@]}" > $WORK/init/control-$m.log 2>&1 &
    PIDS="$PIDS $!"
  done
  for i in $(seq 1 240); do
    alive=0; for p in $PIDS; do kill -0 $p 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 1
  done
  say "controls: ended after ${i}s (alive at the end: $alive)"
  for p in $PIDS; do kill -TERM -- -$p 2>/dev/null; done; sleep 3
  for p in $PIDS; do kill -KILL -- -$p 2>/dev/null; done
  for m in qwen3moe dsv3; do
    say "control $m"; grep -E "FA3|Error|error|attention_backend='" $WORK/init/control-$m.log \
      | cut -c1-300 | tail -5 | tee -a "$LOG"
  done
  ;;
init-sweep)
  for m in ${SWEEP_MODELS:-${INIT_MODELS:-qwen3moe dsv3 qwen3next}}; do
    TR=TRIALS_$m; init_sweep $m ${!TR:-5}
  done
  ;;
init-queue)
  for item in ${INIT_QUEUE:-}; do
    IFS=: read -r kind m name sets <<< "$item"
    L=LAUNCH_S_$m; each=${!L:-${LAUNCH_S:-70}}
    case $kind in
      sweep) est=$(( (name - $(launched $m)) * each + 20 )) ;;
      trial) est=$(( each + 10 )) ;;
      *) say "queue: unknown item $item"; continue ;;
    esac
    left=$(( ${DEADLINE:-9999999999} - $(date +%s) ))
    if [ $est -gt $left ]; then say "queue: $item skipped (needs ~${est}s, ${left}s left)"; continue; fi
    say "queue: $item (~${est}s of ${left}s left)"
    if [ $kind = sweep ]; then init_sweep $m $name; continue; fi
    SETS=(); IFS=, read -ra KV <<< "$sets"; for kv in "${KV[@]}"; do SETS+=(--set "$kv"); done
    tuner trial $WORK/init/$m-$MC.yaml $T --no-check-engine --workload synthetic \
      --questions ${QUESTIONS:-6} "${SETS[@]}" --out $WORK/init/trial-$m-$name.json \
      >> "$LOG" 2>&1
    summary $WORK/init/trial-$m-$name.json
    tar czf "$OUTD/work.tgz" -C "$WORK" . 2>/dev/null
  done
  ;;
init-oom-probe)
  # the generated baseline of OOM_MODEL (default qwen3next) launched by hand at OOM_FRACTION
  # (default 0.91, above the bound init now writes): where the memory outside the fraction
  # went (SGLang's pool and "avail mem" lines, the allocation that failed)
  m=${OOM_MODEL:-qwen3next}
  tuner plan $WORK/init/$m-$MC.yaml --port 30160 --json > $WORK/init/plan-$m-oom.json
  mapfile -t ARGV < <(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["argv"]; i = a.index("--mem-fraction-static"); a[i + 1] = sys.argv[2]; print("\n".join(a))' $WORK/init/plan-$m-oom.json ${OOM_FRACTION:-0.91})
  say "oom probe $m: ${ARGV[*]}"
  timeout ${OOM_S:-150} "${ARGV[@]}" > $WORK/init/oom-$m.log 2>&1
  say "oom probe exit $?"
  grep -E "KV Cache is allocated|#tokens|avail mem|Memory pool|Tried to allocate|OutOfMemory|mamba" \
    $WORK/init/oom-$m.log | cut -c1-400 | tail -20 | tee -a "$LOG"
  ;;
init-diagnose)
  # only when a generated baseline failed: the same launch with one of the kit's
  # kernel-avoiding flags added each, all at once (pool capped so that they share the GPU)
  m=${DIAG_MODEL:-qwen3moe}
  [ "$(cat $WORK/init/sweep-$m.rc 2>/dev/null)" = 0 ] && { say "diagnose: $m's sweep ran"; continue; }
  tuner plan $WORK/init/$m-$MC.yaml --json > $WORK/init/plan-$m.json
  mapfile -t BASE < <(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["argv"]; i = a.index("--port"); print("\n".join(a[:i] + a[i + 2:]))' $WORK/init/plan-$m.json)
  n=0; PIDS=""
  for V in "none" "--sampling-backend pytorch" "--cuda-graph-backend-decode disabled" \
      "--grammar-backend none" "--mm-feature-transport cpu"; do
    n=$((n + 1)); X=(); [ "$V" = none ] || read -ra X <<< "$V"
    setsid "${BASE[@]}" "${X[@]}" --mem-fraction-static 0.3 --max-total-tokens 65536 \
      --port $((30150 + n)) > $WORK/init/diag-$n.log 2>&1 &
    PIDS="$PIDS $!"; echo "$n: $V" | tee -a "$LOG"
  done
  for i in $(seq 1 300); do
    up=0; for k in $(seq 1 $n); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$((30150 + k))/health', timeout=2)" 2>/dev/null && up=$((up + 1)); done
    alive=0; for p in $PIDS; do kill -0 $p 2>/dev/null && alive=$((alive + 1)); done
    [ $((alive - up)) -le 0 ] && break; sleep 2
  done
  for k in $(seq 1 $n); do
    r=$(python3 -c "import json, urllib.request as u; q = u.Request('http://127.0.0.1:$((30150 + k))/generate', json.dumps({'input_ids': [11, 12, 13, 14], 'sampling_params': {'max_new_tokens': 8, 'temperature': 0.6}}).encode(), {'Content-Type': 'application/json'}); print(json.load(u.urlopen(q, timeout=60))['meta_info']['completion_tokens'])" 2>&1 | tail -1)
    say "diag $k: generate -> $r"; grep -E "Error|error" $WORK/init/diag-$k.log | cut -c1-300 | tail -3 | tee -a "$LOG"
  done
  for p in $PIDS; do kill -TERM -- -$p 2>/dev/null; done; sleep 3
  for p in $PIDS; do kill -KILL -- -$p 2>/dev/null; done
  ;;
esac
tar czf "$OUTD/work.tgz" -C "$WORK" . 2>/dev/null   # after each part: a later timeout keeps it
done
ls -la "$OUTD"
