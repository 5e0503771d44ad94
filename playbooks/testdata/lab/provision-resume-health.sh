# Lab scenario of issue 7, for `tbhost lab run` (busybox sh in the VM guest):
#   tbhost lab run --hdd 6 --nvme 2 --out OUT \
#     --file /tables/KRvK.rtbw=../shared/syzygy/tables/KRvK.rtbw ... (a few real tables) \
#     playbooks/testdata/lab/provision-resume-health.sh
# provision-host end to end, interrupted (SIGTERM) in the middle of lvm-apply and
# resumed; health-check on the result exits 0 (and prints nothing), and 2 after a
# member disk is removed. Prints RESULT lines the host side can check.
. /lab/lib.sh
export PATH=/usr/bin:/usr/sbin:/sbin:/bin
S=/tmp/pb
tbhost playbook run --yes --state-dir $S provision-host > /tmp/run1.log 2>&1 &
pid=$!
i=0
while ! grep -q '"current_step": "lvm-apply"' $S/provision-host/state.json 2>/dev/null; do
  sleep 1; i=$((i+1)); [ $i -gt 900 ] && break
done
sleep 15
kill -TERM $pid
wait $pid; echo "RESULT interrupted rc=$?"
cat /tmp/run1.log
grep -E '"status"|current_step' $S/provision-host/state.json | head -2
tbhost playbook run --yes --resume --state-dir $S provision-host; echo "RESULT resume rc=$?"
if ls /tables/* >/dev/null 2>&1; then
  cp /tables/* /srv/syzygy/
  tbhost prefix extract --tables /srv/syzygy --store /srv/syzygy-prefix; echo "RESULT extract rc=$?"
  H=""
else
  H="--set store="
fi
lab_wait_sync vg-hdd/tables 600
tbhost playbook run --state-dir $S --set scrub_budget=20s --set monitor_for=10s $H health-check > /tmp/h1.log 2>&1
echo "RESULT health rc=$? bytes=$(wc -c < /tmp/h1.log)"
echo 1 > /sys/block/sdc/device/delete; sleep 3
tbhost playbook run --state-dir $S --set scrub_budget=20s --set monitor_for=10s $H health-check
echo "RESULT health-degraded rc=$?"
cp $S/provision-host/log.jsonl $LAB_OUT/provision-log.jsonl
cp $S/health-check/log.jsonl $LAB_OUT/health-log.jsonl
