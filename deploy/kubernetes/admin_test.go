package kubernetes_test

import (
	"net"
	"path"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// workloadPorts is a workload's container ports, split into the admin
// listener's (admin.addr's port) and the others (the API's).
type workloadPorts struct {
	admin corev1.ContainerPort
	api   []corev1.ContainerPort
}

func portsOf(t *testing.T, d deployment, tmpl corev1.PodTemplateSpec) workloadPorts {
	t.Helper()
	var p workloadPorts
	found := false
	for _, c := range tmpl.Spec.Containers {
		_, cfg := podConfig(t, d, tmpl.Spec, c)
		_, port, err := net.SplitHostPort(cfg.Admin.Addr)
		if err != nil {
			t.Fatalf("container %s: admin.addr %q: %v", c.Name, cfg.Admin.Addr, err)
		}
		n, _ := strconv.Atoi(port)
		for _, cp := range c.Ports {
			if int(cp.ContainerPort) == n {
				p.admin, found = cp, true
				continue
			}
			p.api = append(p.api, cp)
		}
	}
	if !found {
		t.Fatalf("no container port is admin.addr's")
	}
	return p
}

// targets says whether a Service port sends to the container port cp.
func targets(sp corev1.ServicePort, cp corev1.ContainerPort) bool {
	if sp.TargetPort.Type == intstr.String {
		return sp.TargetPort.StrVal == cp.Name
	}
	n := sp.TargetPort.IntValue()
	if n == 0 {
		n = int(sp.Port)
	}
	return n == int(cp.ContainerPort)
}

// TestAdminPortNotOnClientServices: no Service that carries an API port
// carries the admin port too, the clients' sluice-gateway carries the API
// and nothing else, and each ServiceMonitor scrapes a Service of the admin
// port alone.
func TestAdminPortNotOnClientServices(t *testing.T) {
	d := renderExample(t)
	for name, tmpl := range d.workloads() {
		ports := portsOf(t, d, tmpl)
		for _, s := range d.services {
			if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(tmpl.Labels)) {
				continue
			}
			var admin, api []string
			for _, sp := range s.Spec.Ports {
				if targets(sp, ports.admin) {
					admin = append(admin, sp.Name)
				}
				if slices.ContainsFunc(ports.api, func(cp corev1.ContainerPort) bool { return targets(sp, cp) }) {
					api = append(api, sp.Name)
				}
			}
			if len(admin) > 0 && len(api) > 0 {
				t.Errorf("%s: Service %s carries the admin port (%v) beside the API's (%v): its clients reach the admin listener",
					name, s.Name, admin, api)
			}
		}
	}
	clients := slices.IndexFunc(d.services, func(s *corev1.Service) bool { return s.Name == "sluice-gateway" })
	if clients < 0 {
		t.Fatal("no Service sluice-gateway")
	}
	var names []string
	for _, p := range d.services[clients].Spec.Ports {
		names = append(names, p.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"grpc", "http"}) {
		t.Errorf("Service sluice-gateway carries %v, want grpc and http", names)
	}
	for _, m := range d.serviceMonitors {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range d.services {
			if !sel.Matches(labels.Set(s.Labels)) {
				continue
			}
			var ports []string
			for _, p := range s.Spec.Ports {
				ports = append(ports, p.Name)
			}
			if !slices.Equal(ports, []string{"admin"}) {
				t.Errorf("ServiceMonitor %s scrapes Service %s, which carries %v: want the admin port alone", m.Name, s.Name, ports)
			}
		}
	}
}

// admits says whether a NetworkPolicy rule's ports take the container
// port cp: no ports is every port.
func admits(ports []networkingv1.NetworkPolicyPort, cp corev1.ContainerPort) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String && p.Port.StrVal == cp.Name:
			return true
		case p.Port.Type == intstr.Int:
			lo, hi := p.Port.IntVal, p.Port.IntVal
			if p.EndPort != nil {
				hi = *p.EndPort
			}
			if cp.ContainerPort >= lo && cp.ContainerPort <= hi {
				return true
			}
		}
	}
	return false
}

// isScrapers says whether a peer is pods chosen by label in namespaces
// chosen by label: no address block, neither selector empty (an empty
// one takes every namespace or every pod).
func isScrapers(p networkingv1.NetworkPolicyPeer) bool {
	nonEmpty := func(s *metav1.LabelSelector) bool {
		return s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0)
	}
	return p.IPBlock == nil && nonEmpty(p.NamespaceSelector) && nonEmpty(p.PodSelector)
}

// TestNetworkPolicyAdmitsOnlyScrapers: each workload's pods are selected
// by a NetworkPolicy for ingress, whose rules let every client reach the
// API ports and only the scrapers (pods by label, in namespaces by label,
// the same in every policy) reach the admin port. The kubelet's probes
// come from the node, which a NetworkPolicy always admits.
func TestNetworkPolicyAdmitsOnlyScrapers(t *testing.T) {
	d := renderExample(t)
	var scrapers []networkingv1.NetworkPolicyPeer
	for name, tmpl := range d.workloads() {
		ports := portsOf(t, d, tmpl)
		var rules []networkingv1.NetworkPolicyIngressRule
		isolated := false
		for _, np := range d.networkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			// A policy without policyTypes is an ingress policy.
			if sel.Matches(labels.Set(tmpl.Labels)) &&
				(len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)) {
				isolated = true
				rules = append(rules, np.Spec.Ingress...)
			}
		}
		if !isolated {
			t.Errorf("%s: no NetworkPolicy selects its pods for ingress: anyone in the cluster reaches the admin port %d", name, ports.admin.ContainerPort)
			continue
		}
		adminAdmitted := false
		for _, r := range rules {
			if !admits(r.Ports, ports.admin) {
				continue
			}
			adminAdmitted = true
			if len(r.From) == 0 {
				t.Errorf("%s: a rule admits the admin port from anywhere: %+v", name, r)
			}
			for _, p := range r.From {
				if !isScrapers(p) {
					t.Errorf("%s: a rule admits the admin port from %+v, which is not pods by label in namespaces by label", name, p)
				}
				scrapers = append(scrapers, p)
			}
		}
		if !adminAdmitted {
			t.Errorf("%s: no rule admits the admin port: the scrapers cannot reach it", name)
		}
		for _, cp := range ports.api {
			if !slices.ContainsFunc(rules, func(r networkingv1.NetworkPolicyIngressRule) bool {
				return len(r.From) == 0 && admits(r.Ports, cp)
			}) {
				t.Errorf("%s: the API port %s (%d) is not admitted from every client", name, cp.Name, cp.ContainerPort)
			}
		}
	}
	for _, p := range scrapers {
		if p.String() != scrapers[0].String() {
			t.Errorf("the policies admit different scrapers: %v and %v; docs/deploy.md names one", p, scrapers[0])
		}
	}
}

// TestAdminTokenFromSecret: each container's admin.auth.token_file is a
// key of a Secret mounted as a directory (not subPath) under a name
// without a content hash, so a rotated token is swapped in by the kubelet
// and re-read by sluice without a restart.
func TestAdminTokenFromSecret(t *testing.T) {
	d := renderExample(t)
	for name, tmpl := range d.workloads() {
		for _, c := range tmpl.Spec.Containers {
			_, cfg := podConfig(t, d, tmpl.Spec, c)
			file := cfg.Admin.Auth.TokenFile
			if file == "" {
				t.Errorf("%s/%s: no admin.auth.token_file: POST /admin/contracts/reload is refused to everyone", name, c.Name)
				continue
			}
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path.Dir(file) })
			if i < 0 {
				t.Errorf("%s/%s: nothing is mounted at %s", name, c.Name, path.Dir(file))
				continue
			}
			m := c.VolumeMounts[i]
			if m.SubPath != "" {
				t.Errorf("%s/%s: %s is a subPath mount, which the kubelet never updates", name, c.Name, m.MountPath)
			}
			v := volume(t, tmpl.Spec, m.Name)
			if v.Secret == nil {
				t.Errorf("%s/%s: %s is not mounted from a Secret", name, c.Name, file)
				continue
			}
			if v.Secret.SecretName != "sluice-admin-token" {
				t.Errorf("%s/%s: %s is mounted from Secret %s, want sluice-admin-token under that name (no content hash: a rotation would roll the pods)",
					name, c.Name, file, v.Secret.SecretName)
				continue
			}
			if _, ok := d.secret(t, v.Secret.SecretName).Data[path.Base(file)]; !ok {
				t.Errorf("%s/%s: Secret %s has no key %s", name, c.Name, v.Secret.SecretName, path.Base(file))
			}
		}
	}
}
