package faultsuite

import (
	"maps"
	"testing"
)

// The cluster suite reads kafka.sh's and kcat's lines; these are the lines
// they print.
func TestClusterLines(t *testing.T) {
	status := `node 1: running (pid 29028) on 127.0.0.1:29401, controller 127.0.0.1:29411, rss 330 MiB, data in /tmp/x-cluster/node1/data
node 2: paused (pid 29102) on 127.0.0.1:29402, controller 127.0.0.1:29412, rss 313 MiB, data in /tmp/x-cluster/node2/data
node 3: not running (127.0.0.1:29403)
`
	states, addrs := map[int]string{}, map[int]string{}
	for _, m := range nodeStatus.FindAllStringSubmatch(status, -1) {
		states[len(states)+1], addrs[len(addrs)+1] = m[2], m[3]
	}
	if want := map[int]string{1: "running", 2: "paused", 3: "not running"}; !maps.Equal(states, want) {
		t.Errorf("states %v, want %v", states, want)
	}
	if want := map[int]string{1: "127.0.0.1:29401", 2: "127.0.0.1:29402", 3: "127.0.0.1:29403"}; !maps.Equal(addrs, want) {
		t.Errorf("addresses %v, want %v (the client port, not the controller's)", addrs, want)
	}

	metadata := `Metadata for t (from broker 2: 127.0.0.1:29402/2):
 3 brokers:
  broker 1 at 127.0.0.1:29401 (controller)
 1 topics:
  topic "t" with 3 partitions:
    partition 0, leader 2, replicas: 2,3,1, isrs: 2,3,1
    partition 1, leader -1, replicas: 3,1,2, isrs: 3
    partition 12, leader 1, replicas: 1,2,3, isrs: 1,2,3
`
	leaders := map[string]string{}
	for _, m := range kcatPartition.FindAllStringSubmatch(metadata, -1) {
		leaders[m[1]] = m[2]
	}
	if want := map[string]string{"0": "2", "1": "-1", "12": "1"}; !maps.Equal(leaders, want) {
		t.Errorf("leaders %v, want %v", leaders, want)
	}

	log := "a\nlevel=WARN msg=\"admission: drain failed; retrying\" err=x\nlevel=WARN msg=\"admission: drain failed; retrying\" err=y\n"
	if got := firstLine(log, "drain failed", 100); got != `level=WARN msg="admission: drain failed; retrying" err=x` {
		t.Errorf("firstLine: %q", got)
	}
	if got := firstLine(log, "drain failed", 9); got != "level=WAR" {
		t.Errorf("firstLine cut at 9: %q", got)
	}
	if got := firstLine(log, "absent", 100); got != "" {
		t.Errorf("firstLine of nothing: %q", got)
	}
}

func TestScenarioNames(t *testing.T) {
	t.Setenv("SLUICE_FAULTS_SKIP", " leader-sigkill,,broker-pause ")
	if got, want := scenarioNames("SLUICE_FAULTS_SKIP"), map[string]bool{"leader-sigkill": true, "broker-pause": true}; !maps.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	t.Setenv("SLUICE_FAULTS_SKIP", "")
	if got := scenarioNames("SLUICE_FAULTS_SKIP"); got != nil {
		t.Errorf("names of an empty list %v, want nil (every scenario runs)", got)
	}
}
