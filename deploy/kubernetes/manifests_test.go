package kubernetes_test

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// TestDecodeIsStrict shows that render refuses what the API server would
// drop or refuse: a copy of the tree with one wrong field in a file of the
// base, of a component or of the overlay must not decode.
func TestDecodeIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"unknown field in a StatefulSet spec", "base/gateway.yaml",
			"  serviceName: sluice-gateway-headless\n", "  serviceName: sluice-gateway-headless\n  replicaCount: 3\n", "replicaCount"},
		{"unknown field in a container", "base/consumer.yaml",
			"          args: [consumer,", "          argv: [x]\n          args: [consumer,", "argv"},
		{"unknown field in a ServiceMonitor", "monitoring/servicemonitors.yaml",
			"      scheme: https\n", "      scheme: https\n      scrapeTLS: true\n", "scrapeTLS"},
		{"unknown kind", "monitoring/servicemonitors.yaml",
			"kind: ServiceMonitor\nmetadata:\n  name: sluice-consumer", "kind: ServiceMonitorz\nmetadata:\n  name: sluice-consumer", "ServiceMonitorz"},
		{"unknown field in a PrometheusRule", "monitoring/prometheusrule.yaml",
			"spec:\n  groups:\n", "spec:\n  ruleGroups: []\n  groups:\n", "ruleGroups"},
		{"unknown field in an Ingress", "components/ingress/ingress.yaml",
			"  ingressClassName: nginx\n", "  ingressClassName: nginx\n  className: nginx\n", "className"},
		{"unknown field in a GRPCRoute", "components/gateway-api/gateway-api.yaml",
			"  hostnames: [grpc.sluice.example.com]\n", "  hostnames: [grpc.sluice.example.com]\n  hosts: [x]\n", "hosts"},
		{"unknown field in a BackendTLSPolicy", "components/gateway-api/gateway-api.yaml",
			"    hostname: sluice-gateway.sluice.svc\n", "    hostname: sluice-gateway.sluice.svc\n    verify: true\n", "verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := stageTree(t)
			p := filepath.Join(dir, tc.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.old) {
				t.Fatalf("%s does not contain %q", tc.file, tc.old)
			}
			if _, err := render(t, filepath.Join(dir, exampleOverlay)); err != nil {
				t.Fatalf("the unchanged copy does not render: %v", err)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = render(t, filepath.Join(dir, exampleOverlay))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render: err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// sluiceConfig is what the manifests depend on in a sluice config file;
// durations are strings as the file has them, empty for a default.
type sluiceConfig struct {
	Gateway struct {
		PublishTimeout string `json:"publish_timeout"`
		MemoryLimit    int64  `json:"memory_limit"`
		HTTP           struct {
			WriteTimeout string `json:"write_timeout"`
		} `json:"http"`
	} `json:"gateway"`
	Sources []struct {
		Name   string   `json:"name"`
		KeyEnv []string `json:"key_env"`
	} `json:"sources"`
	Kafka struct {
		DeliveryTimeout string `json:"delivery_timeout"`
	} `json:"kafka"`
	Spool struct {
		Dir string `json:"dir"`
	} `json:"spool"`
	Admission struct {
		DrainTimeout  string `json:"drain_timeout"`
		ShutdownDrain string `json:"shutdown_drain"`
	} `json:"admission"`
	Admin struct {
		Addr string `json:"addr"`
		Auth struct {
			TokenFile string `json:"token_file"`
		} `json:"auth"`
	} `json:"admin"`
	Contracts struct {
		DescriptorSet string `json:"descriptor_set"`
		Reload        struct {
			WatchInterval *string `json:"watch_interval"`
		} `json:"reload"`
	} `json:"contracts"`
}

// Defaults of the durations above (deploy/sluice.example.yaml).
const (
	defaultPublishTimeout  = 10 * time.Second
	defaultWriteTimeout    = 30 * time.Second
	defaultDeliveryTimeout = 10 * time.Second
	defaultDrainTimeout    = 10 * time.Second
	defaultShutdownDrain   = 15 * time.Second
)

func duration(t *testing.T, s string, def time.Duration) time.Duration {
	t.Helper()
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// podConfig finds the sluice config a container runs with: its --config
// argument, in the ConfigMap mounted at that path's directory.
func podConfig(t *testing.T, d deployment, spec corev1.PodSpec, c corev1.Container) (raw []byte, cfg sluiceConfig) {
	t.Helper()
	i := slices.Index(c.Args, "--config")
	if i < 0 || i+1 == len(c.Args) {
		t.Fatalf("container %s: no --config in %v", c.Name, c.Args)
	}
	file := c.Args[i+1]
	for _, m := range c.VolumeMounts {
		if path.Dir(file) != m.MountPath {
			continue
		}
		v := volume(t, spec, m.Name)
		if v.ConfigMap == nil {
			t.Fatalf("container %s: %s is not a ConfigMap's", c.Name, file)
		}
		data, ok := d.configMap(t, v.ConfigMap.Name).Data[path.Base(file)]
		if !ok {
			t.Fatalf("container %s: ConfigMap %s has no %s", c.Name, v.ConfigMap.Name, path.Base(file))
		}
		if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return []byte(data), cfg
	}
	t.Fatalf("container %s: nothing is mounted at %s", c.Name, path.Dir(file))
	return nil, cfg
}

func volume(t *testing.T, spec corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %s", name)
	return corev1.Volume{}
}

func onlyOne[T any](t *testing.T, kind string, xs []T) T {
	t.Helper()
	if len(xs) != 1 {
		t.Fatalf("%d %ss, want 1", len(xs), kind)
	}
	return xs[0]
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func TestGatewaySpoolVolume(t *testing.T) {
	d := renderExample(t)
	sts := onlyOne(t, "StatefulSet", d.statefulSets)
	spec := sts.Spec.Template.Spec
	c := container(t, spec, "gateway")
	_, cfg := podConfig(t, d, spec, c)
	if cfg.Spool.Dir == "" {
		t.Fatal("gateway.yaml: spool.dir is empty: events would be refused while Kafka is down")
	}
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == cfg.Spool.Dir {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		t.Fatalf("nothing is mounted at spool.dir %s", cfg.Spool.Dir)
	}
	if mount.ReadOnly {
		t.Fatalf("the spool's mount is read-only")
	}
	if !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == mount.Name }) {
		t.Fatalf("spool.dir is mounted from %q, which is not a volumeClaimTemplate", mount.Name)
	}
	if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name }) {
		t.Fatalf("the pod has a volume %q too, which would shadow its claim", mount.Name)
	}
	p := sts.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Fatalf("persistentVolumeClaimRetentionPolicy = %+v, want Retain when deleted and when scaled", p)
	}
	headless := false
	for _, s := range d.services {
		if s.Name == sts.Spec.ServiceName && s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = true
		}
	}
	if !headless {
		t.Fatalf("serviceName %q is not a headless Service", sts.Spec.ServiceName)
	}
}

// workloads are the pod templates, by workload name.
func (d deployment) workloads() map[string]corev1.PodTemplateSpec {
	w := map[string]corev1.PodTemplateSpec{}
	for _, s := range d.statefulSets {
		w["StatefulSet/"+s.Name] = s.Spec.Template
	}
	for _, s := range d.deployments {
		w["Deployment/"+s.Name] = s.Spec.Template
	}
	return w
}

func TestProbesOnAdminPort(t *testing.T) {
	d := renderExample(t)
	for name, tmpl := range d.workloads() {
		for _, c := range tmpl.Spec.Containers {
			_, cfg := podConfig(t, d, tmpl.Spec, c)
			_, port, err := net.SplitHostPort(cfg.Admin.Addr)
			if err != nil {
				t.Fatalf("%s: admin.addr %q: %v", name, cfg.Admin.Addr, err)
			}
			if host, _, _ := net.SplitHostPort(cfg.Admin.Addr); host != "0.0.0.0" && host != "" {
				t.Errorf("%s: admin.addr %s: the kubelet probes the pod's IP; listen on 0.0.0.0", name, cfg.Admin.Addr)
			}
			want, _ := strconv.Atoi(port)
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
			}{{"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("%s: container %s has no HTTP %s probe", name, c.Name, p.name)
					continue
				}
				got := resolvePort(t, c, p.probe.HTTPGet.Port)
				if got != want {
					t.Errorf("%s: %s probe on port %d, admin.addr is %s", name, p.name, got, cfg.Admin.Addr)
				}
				wantPath := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[p.name]
				if p.probe.HTTPGet.Path != wantPath {
					t.Errorf("%s: %s probe path %q, want %q", name, p.name, p.probe.HTTPGet.Path, wantPath)
				}
				if p.probe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
					t.Errorf("%s: %s probe scheme %q: the admin listener speaks HTTPS", name, p.name, p.probe.HTTPGet.Scheme)
				}
			}
		}
	}
}

func resolvePort(t *testing.T, c corev1.Container, p intstr.IntOrString) int {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

func TestNoContainerRunsAsRoot(t *testing.T) {
	d := renderExample(t)
	for name, tmpl := range d.workloads() {
		pod := tmpl.Spec.SecurityContext
		if pod == nil {
			pod = &corev1.PodSecurityContext{}
		}
		for _, c := range slices.Concat(tmpl.Spec.InitContainers, tmpl.Spec.Containers) {
			sc := c.SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
			}
			nonRoot := firstSet(sc.RunAsNonRoot, pod.RunAsNonRoot)
			user := firstSet(sc.RunAsUser, pod.RunAsUser)
			switch {
			case nonRoot == nil || !*nonRoot:
				t.Errorf("%s/%s: runAsNonRoot is not true", name, c.Name)
			case user == nil || *user == 0:
				t.Errorf("%s/%s: runAsUser is unset or 0", name, c.Name)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: readOnlyRootFilesystem is not true", name, c.Name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s/%s: allowPrivilegeEscalation is not false", name, c.Name)
			}
			if sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s/%s: privileged", name, c.Name)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s/%s: capabilities %+v, want drop [ALL] and nothing added", name, c.Name, sc.Capabilities)
			}
			seccomp := firstSet(sc.SeccompProfile, pod.SeccompProfile)
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s/%s: seccompProfile is not RuntimeDefault", name, c.Name)
			}
			if !strings.HasPrefix(c.Image, "ghcr.io/sluicehq/sluice:") {
				t.Errorf("%s/%s: image %q is not deploy/Dockerfile's (kustomization images:)", name, c.Name, c.Image)
			}
		}
		for _, v := range tmpl.Spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s: volume %s is a hostPath", name, v.Name)
			}
		}
	}
}

func firstSet[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// TestGatewayResources holds the container's memory to gateway.memory_limit
// and its grace period to the flush that cmd/sluice/gateway.go does on
// SIGTERM (the StatefulSet's comment has the arithmetic).
func TestGatewayResources(t *testing.T) {
	d := renderExample(t)
	sts := onlyOne(t, "StatefulSet", d.statefulSets)
	spec := sts.Spec.Template.Spec
	c := container(t, spec, "gateway")
	_, cfg := podConfig(t, d, spec, c)

	limit := cfg.Gateway.MemoryLimit
	if limit < 128<<20 {
		t.Fatalf("gateway.memory_limit %d: sluice requires >= 128 MiB, and the pod needs a bound", limit)
	}
	mem, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		t.Fatal("no memory limit")
	}
	if got := mem.Value(); got <= limit || got > limit+limit/4 {
		t.Errorf("memory limit %d: want a bit above gateway.memory_limit %d (at most a quarter more)", got, limit)
	}
	if req := c.Resources.Requests[corev1.ResourceMemory]; req.Cmp(mem) != 0 {
		t.Errorf("memory request %s differs from the limit %s: the gateway's memory is bounded, so reserve it", req.String(), mem.String())
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Error("no CPU request")
	}

	grace := shutdownGrace(t)
	var preStop time.Duration
	if h := c.Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Sleep != nil {
		preStop = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	if preStop == 0 {
		t.Error("no preStop sleep: SIGTERM would come before the endpoints drop the pod")
	}
	requests := min(grace, max(duration(t, cfg.Gateway.PublishTimeout, defaultPublishTimeout), duration(t, cfg.Gateway.HTTP.WriteTimeout, defaultWriteTimeout)))
	spoolDrain := duration(t, cfg.Admission.ShutdownDrain, defaultShutdownDrain)
	drain := duration(t, cfg.Admission.DrainTimeout, defaultDrainTimeout)
	flush := min(grace, duration(t, cfg.Kafka.DeliveryTimeout, defaultDeliveryTimeout))
	need := preStop + requests + spoolDrain + drain + flush
	got := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if got < need {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + requests %v + spool drain %v + drainer stop %v + producer flush %v = %v",
			got, preStop, requests, spoolDrain, drain, flush, need)
	}
}

// shutdownGrace is cmd/sluice's bound on each step of the gateway's
// shutdown, read from its source so this test follows it.
func shutdownGrace(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "cmd", "sluice", "gateway.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "const shutdownGrace = %d * time.Second", &n); err == nil {
			return time.Duration(n) * time.Second
		}
	}
	t.Fatal("cmd/sluice/gateway.go: no `const shutdownGrace = N * time.Second`")
	return 0
}

func TestGatewayEnvHasEveryKeyEnv(t *testing.T) {
	d := renderExample(t)
	sts := onlyOne(t, "StatefulSet", d.statefulSets)
	c := container(t, sts.Spec.Template.Spec, "gateway")
	_, cfg := podConfig(t, d, sts.Spec.Template.Spec, c)
	for _, s := range cfg.Sources {
		for _, name := range s.KeyEnv {
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
			if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
				t.Errorf("sources %s: key_env %s is not set from a Secret", s.Name, name)
				continue
			}
			ref := c.Env[i].ValueFrom.SecretKeyRef
			if _, ok := d.secret(t, ref.Name).Data[ref.Key]; !ok {
				t.Errorf("key_env %s: Secret %s has no key %s", name, ref.Name, ref.Key)
			}
		}
	}
}

func TestConsumerDeployment(t *testing.T) {
	d := renderExample(t)
	dep := onlyOne(t, "Deployment", d.deployments)
	if dep.Spec.Replicas != nil {
		t.Errorf("replicas %d is set: every apply would reset what the HPA chose", *dep.Spec.Replicas)
	}
	hpa := onlyOne(t, "HorizontalPodAutoscaler", d.hpas)
	ref := hpa.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != dep.Name {
		t.Errorf("HPA targets %+v, want the Deployment %s", ref, dep.Name)
	}
	var lag, cpu bool
	for _, m := range hpa.Spec.Metrics {
		switch {
		case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods.Metric.Name == "sluice_consumer_lag":
			lag = true
		case m.Type == autoscalingv2.ExternalMetricSourceType && m.External.Metric.Name == "sluice_consumer_lag":
			lag = true
		case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource.Name == corev1.ResourceCPU:
			cpu = true
		}
	}
	if !lag || !cpu {
		t.Errorf("HPA metrics: lag %v, cpu %v; want both", lag, cpu)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
		t.Errorf("HPA replicas %v..%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	c := container(t, dep.Spec.Template.Spec, "consumer")
	if !slices.Contains(c.Args, "consumer") {
		t.Errorf("consumer container args %v", c.Args)
	}
}

// TestSelectors: each PDB and Service selects one workload's pods, each
// workload has a PDB, Service target ports name container ports, and each
// ServiceMonitor selects one Service and scrapes a port it has.
func TestSelectors(t *testing.T) {
	d := renderExample(t)
	workloads := d.workloads()
	selected := func(kind, name string, sel *metav1.LabelSelector) (string, corev1.PodTemplateSpec) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() {
			t.Fatalf("%s %s: selector %v: %v", kind, name, sel, err)
		}
		var hits []string
		for w, tmpl := range workloads {
			if s.Matches(labels.Set(tmpl.Labels)) {
				hits = append(hits, w)
			}
		}
		if len(hits) != 1 {
			t.Fatalf("%s %s selects %v, want one workload", kind, name, hits)
		}
		return hits[0], workloads[hits[0]]
	}
	withPDB := map[string]bool{}
	for _, p := range d.pdbs {
		w, _ := selected("PodDisruptionBudget", p.Name, p.Spec.Selector)
		withPDB[w] = true
	}
	for w := range workloads {
		if !withPDB[w] {
			t.Errorf("%s has no PodDisruptionBudget", w)
		}
	}
	for _, s := range d.services {
		_, tmpl := selected("Service", s.Name, &metav1.LabelSelector{MatchLabels: s.Spec.Selector})
		for _, p := range s.Spec.Ports {
			found := false
			for _, c := range tmpl.Spec.Containers {
				if slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
					return (p.TargetPort.Type == intstr.String && cp.Name == p.TargetPort.StrVal) || int(cp.ContainerPort) == p.TargetPort.IntValue()
				}) {
					found = true
				}
			}
			if !found {
				t.Errorf("Service %s port %s: target %s is no container port", s.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	if len(d.serviceMonitors) != len(workloads) {
		t.Errorf("%d ServiceMonitors for %d workloads", len(d.serviceMonitors), len(workloads))
	}
	for _, m := range d.serviceMonitors {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Fatalf("ServiceMonitor %s: selector: %v", m.Name, err)
		}
		var svcs []*corev1.Service
		for _, s := range d.services {
			if s.Namespace == m.Namespace && sel.Matches(labels.Set(s.Labels)) {
				svcs = append(svcs, s)
			}
		}
		if len(svcs) != 1 {
			t.Fatalf("ServiceMonitor %s selects %d Services, want 1 (a pod behind two would be scraped twice)", m.Name, len(svcs))
		}
		for _, e := range m.Spec.Endpoints {
			if !slices.ContainsFunc(svcs[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
				t.Errorf("ServiceMonitor %s: Service %s has no port %q", m.Name, svcs[0].Name, e.Port)
			}
			if e.Scheme == nil || strings.ToLower(e.Scheme.String()) != "https" {
				t.Errorf("ServiceMonitor %s: scheme %v, the admin listener speaks HTTPS", m.Name, e.Scheme)
			}
		}
	}
}

// TestConsumerConfigFollowsGateway: the consumer's file has the gateway's
// Kafka connection, contracts and the limits and topics that decide what it
// reads and which dead letters it must hold.
func TestConsumerConfigFollowsGateway(t *testing.T) {
	d := renderExample(t)
	files := map[string]map[string]any{}
	for name, tmpl := range d.workloads() {
		for _, c := range tmpl.Spec.Containers {
			raw, _ := podConfig(t, d, tmpl.Spec, c)
			var m map[string]any
			if err := yaml.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			files[name] = m
		}
	}
	gw, cons := files["StatefulSet/sluice-gateway"], files["Deployment/sluice-consumer"]
	if gw == nil || cons == nil {
		t.Fatalf("configs of %v", files)
	}
	get := func(m map[string]any, keys ...string) any {
		var v any = m
		for _, k := range keys {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	for _, keys := range [][]string{{"kafka"}, {"contracts"}, {"topics"}, {"gateway", "limits", "max_event_bytes"}} {
		g, c := get(gw, keys...), get(cons, keys...)
		if fmt.Sprint(g) != fmt.Sprint(c) {
			t.Errorf("%s: gateway.yaml has %v, consumer.yaml %v", strings.Join(keys, "."), g, c)
		}
	}
}

// TestContractsReloadInPlace: each workload reads its descriptor set from
// the contracts ConfigMap, mounted as a directory (a subPath mount is
// never updated) under a name without a content hash, and watches it: a
// new image is swapped in place by the kubelet and reloaded live, not
// rolled out by restarting the pods.
func TestContractsReloadInPlace(t *testing.T) {
	d := renderExample(t)
	for name, tmpl := range d.workloads() {
		spec := tmpl.Spec
		c := spec.Containers[0]
		_, cfg := podConfig(t, d, spec, c)
		file := cfg.Contracts.DescriptorSet
		var found bool
		for _, m := range c.VolumeMounts {
			if path.Dir(file) != m.MountPath {
				continue
			}
			found = true
			if m.SubPath != "" {
				t.Errorf("%s: %s is a subPath mount, which the kubelet never updates", name, m.MountPath)
			}
			v := volume(t, spec, m.Name)
			if v.ConfigMap == nil || v.ConfigMap.Name != "sluice-contracts" {
				t.Errorf("%s: %s is not mounted from the ConfigMap sluice-contracts: %+v", name, file, v.VolumeSource)
				continue
			}
			cm := d.configMap(t, v.ConfigMap.Name)
			if _, ok := cm.BinaryData[path.Base(file)]; !ok {
				t.Errorf("%s: ConfigMap %s has no %s", name, cm.Name, path.Base(file))
			}
		}
		if !found {
			t.Errorf("%s: nothing is mounted at %s", name, path.Dir(file))
		}
		if w := cfg.Contracts.Reload.WatchInterval; w != nil && duration(t, *w, 0) == 0 {
			t.Errorf("%s: contracts.reload.watch_interval is 0: a new image would wait for a SIGHUP", name)
		}
	}
}
