package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/stormsim/stormsim/scenario"
)

// The names the manifests and docs/distributed.md share.
const (
	placeholder = "__START_AT__"       // STORMSIM_START_AT's value until the substitution
	claimName   = "stormsim-results"   // the results volume
	shardsJob   = "stormsim-shards"    // the Indexed Job
	mergeJob    = "stormsim-merge"     // the merge Job
	upName      = "stormsim-up"        // up's Deployment and Service
	redisName   = "stormsim-redis"     // Redis's Deployment and Service
	configMap   = "stormsim-scenarios" // scenarios.toml
	// substitution is the documented step, after `kubectl kustomize DIR |`.
	substitution = `sed "s/__START_AT__/$START_AT/"`
)

// objects are the decoded documents of a set of manifests, by kind and
// name; kustomizations holds the kustomization.yaml files.
type objects struct {
	jobs           map[string]*batchv1.Job
	deployments    map[string]*appsv1.Deployment
	services       map[string]*corev1.Service
	configMaps     map[string]*corev1.ConfigMap
	claims         map[string]*corev1.PersistentVolumeClaim
	kustomizations map[string]*kusttypes.Kustomization
}

func newObjects() *objects {
	return &objects{jobs: map[string]*batchv1.Job{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		claims: map[string]*corev1.PersistentVolumeClaim{}, kustomizations: map[string]*kusttypes.Kustomization{}}
}

// decode splits data (from file) into its YAML documents and decodes each
// strictly into the API type of its kind: an unknown or duplicated field,
// or a kind the manifests do not use, is an error naming the file and the
// document.
func (o *objects) decode(file string, data []byte) error {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var errs []error
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := o.decodeDoc(doc); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: %w", file, i, err))
		}
	}
	return errors.Join(errs...)
}

func (o *objects) decodeDoc(doc []byte) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var err error
	name := tm.Metadata.Name
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		var v batchv1.Job
		err, o.jobs[name] = yaml.UnmarshalStrict(doc, &v), &v
	case "apps/v1 Deployment":
		var v appsv1.Deployment
		err, o.deployments[name] = yaml.UnmarshalStrict(doc, &v), &v
	case "v1 Service":
		var v corev1.Service
		err, o.services[name] = yaml.UnmarshalStrict(doc, &v), &v
	case "v1 ConfigMap":
		var v corev1.ConfigMap
		err, o.configMaps[name] = yaml.UnmarshalStrict(doc, &v), &v
	case "v1 PersistentVolumeClaim":
		var v corev1.PersistentVolumeClaim
		err, o.claims[name] = yaml.UnmarshalStrict(doc, &v), &v
	case "kustomize.config.k8s.io/v1beta1 Kustomization", "kustomize.config.k8s.io/v1alpha1 Component":
		var v kusttypes.Kustomization
		err, o.kustomizations[name] = yaml.UnmarshalStrict(doc, &v), &v
	default:
		return fmt.Errorf("kind %q of %q (%s) is none the manifests use", tm.Kind, name, tm.APIVersion)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", tm.Kind, name, err)
	}
	return nil
}

// decodeTree decodes every .yaml file under dir, kustomizations included.
func decodeTree(dir string) (*objects, []string, error) {
	o := newObjects()
	var files []string
	var errs []error
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, rel)
		if err := o.decode(rel, b); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return o, files, errors.Join(errs...)
}

// build runs kustomize (the library kubectl kustomize embeds) on dir.
func build(dir string) ([]byte, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// substitute runs the documented substitution on a built set of manifests.
func substitute(t *testing.T, built []byte, startAt string) []byte {
	t.Helper()
	cmd := exec.Command("sed", "s/"+placeholder+"/"+startAt+"/")
	cmd.Stdin = bytes.NewReader(built)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sed: %v", err)
	}
	return out
}

// flagValue is the argument after flag in args, and whether flag is there
// exactly once.
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) || slices.Index(args[i+1:], flag) >= 0 {
		return "", false
	}
	return args[i+1], true
}

// makeImage is the IMAGE `make image` builds by default.
func makeImage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("../Makefile: no IMAGE ?= line")
	}
	return string(m[1])
}

// run is what a built set of manifests says about one sharded run.
type run struct {
	self bool // stormsim up in the cluster (deploy/k8s), or --target (own-target)
}

// check checks the fields a sharded run depends on in o, a built set of
// manifests (placeholder still in place), and returns every problem.
func (r run) check(o *objects, image string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// The results volume.
	if pvc := o.claims[claimName]; pvc == nil {
		bad("no PersistentVolumeClaim %s", claimName)
	} else if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		bad("PersistentVolumeClaim %s: accessModes %v, want [ReadWriteMany]: the shards, up and the merge write it from different nodes", claimName, pvc.Spec.AccessModes)
	}
	cm := o.configMaps[configMap]
	if cm == nil || cm.Data["scenarios.toml"] == "" {
		bad("no ConfigMap %s with scenarios.toml", configMap)
		return errs
	}
	file, err := loadScenarios(cm.Data["scenarios.toml"])
	if err != nil {
		bad("ConfigMap %s: scenarios.toml: %v", configMap, err)
		return errs
	}

	// The shards.
	job := o.jobs[shardsJob]
	if job == nil {
		bad("no Job %s", shardsJob)
		return errs
	}
	s := job.Spec
	n := int32(-1)
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		bad("Job %s: completionMode %v, want Indexed (JOB_COMPLETION_INDEX is the shard)", shardsJob, s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 1 {
		bad("Job %s: completions %v and parallelism %v, want them equal: every shard runs at once", shardsJob, ptrString(s.Completions), ptrString(s.Parallelism))
	} else {
		n = *s.Completions
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 {
		bad("Job %s: backoffLimitPerIndex %v, want 0: a shard run again starts after the barrier", shardsJob, ptrString(s.BackoffLimitPerIndex))
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		bad("Job %s: restartPolicy %q, want Never", shardsJob, pod.RestartPolicy)
	}
	errs = append(errs, podChecks("Job "+shardsJob, &pod, image)...)
	shard := pod.Containers[0]
	args := shard.Args
	if len(args) < 2 || args[0] != "run" {
		bad("Job %s: args %q, want run SCENARIO ...", shardsJob, args)
		return errs
	}
	name := args[1]
	if !slices.Contains(file.Names(), name) {
		bad("Job %s runs scenario %q, which ConfigMap %s's scenarios.toml does not hold (it has %v)", shardsJob, name, configMap, file.Names())
	}
	if v, _ := flagValue(args, "--shards"); v != fmt.Sprint(n) {
		bad("Job %s: --shards %q, want %d, its completions", shardsJob, v, n)
	}
	if v, _ := flagValue(args, "--engine"); v != "live" {
		bad("Job %s: --engine %q, want live", shardsJob, v)
	}
	if slices.Contains(args, "--shard") || slices.ContainsFunc(shard.Env, func(e corev1.EnvVar) bool { return e.Name == "JOB_COMPLETION_INDEX" }) {
		bad("Job %s sets its shard itself: Kubernetes sets JOB_COMPLETION_INDEX in each pod", shardsJob)
	}
	errs = append(errs, mountedFile("Job "+shardsJob, &pod, 0, args, "--file", configMap)...)
	out, _ := flagValue(args, "--out")
	errs = append(errs, onResults("Job "+shardsJob, &pod, 0, "--out", out)...)
	starts := 0
	for _, e := range shard.Env {
		if e.Name == "STORMSIM_START_AT" {
			starts++
			if e.Value != placeholder {
				bad("Job %s: STORMSIM_START_AT is %q, want the placeholder %s the documented substitution fills", shardsJob, e.Value, placeholder)
			}
		}
	}
	if starts != 1 || slices.Contains(args, "--start-at") {
		bad("Job %s: STORMSIM_START_AT set %d times (--start-at in args: %v), want once, in env", shardsJob, starts, slices.Contains(args, "--start-at"))
	}

	// The merge.
	mj := o.jobs[mergeJob]
	if mj == nil {
		bad("no Job %s", mergeJob)
		return errs
	}
	mpod := mj.Spec.Template.Spec
	margs := mpod.Containers[0].Args
	if mpod.RestartPolicy != corev1.RestartPolicyNever {
		bad("Job %s: restartPolicy %q, want Never", mergeJob, mpod.RestartPolicy)
	}
	errs = append(errs, podChecks("Job "+mergeJob, &mpod, image)...)
	if len(margs) == 0 || margs[0] != "merge" {
		bad("Job %s: args %q, want merge ...", mergeJob, margs)
		return errs
	}
	if v, _ := flagValue(margs, "--expect"); v != fmt.Sprint(n) {
		bad("Job %s: --expect %q, want %d, the shards Job's completions", mergeJob, v, n)
	}
	if v, _ := flagValue(margs, "--wait"); v == "" {
		bad("Job %s: no --wait: it starts with the shards and must wait for their done markers", mergeJob)
	} else if d, err := time.ParseDuration(v); err != nil || d <= 0 {
		bad("Job %s: --wait %q is not a positive duration", mergeJob, v)
	}
	if margs[len(margs)-1] != out {
		bad("Job %s merges %q, want the shards' --out %q", mergeJob, margs[len(margs)-1], out)
	}
	errs = append(errs, onResults("Job "+mergeJob, &mpod, 0, "the shards' folder", margs[len(margs)-1])...)
	mout, _ := flagValue(margs, "--out")
	errs = append(errs, onResults("Job "+mergeJob, &mpod, 0, "--out", mout)...)
	upLogs, hasUpLogs := flagValue(margs, "--up-logs")

	if !r.self {
		if v, _ := flagValue(args, "--target"); !strings.HasPrefix(v, "http") || slices.Contains(args, "--up") {
			bad("Job %s: args %q, want --target URL and no --up", shardsJob, args)
		}
		if d, _ := flagValue(args, "--designs"); d == "" {
			bad("Job %s: no --designs: a sharded run at a URL runs one design", shardsJob)
		}
		if hasUpLogs || slices.Contains(margs, "--up-logs") || len(o.deployments) > 0 {
			bad("own target: --up-logs %q, deployments %d, want neither", upLogs, len(o.deployments))
		}
		return errs
	}

	// stormsim up, in the cluster.
	state, _ := flagValue(args, "--up")
	dep, svc := o.deployments[upName], o.services[upName]
	if dep == nil || svc == nil {
		bad("no Deployment and Service %s", upName)
		return errs
	}
	upod := dep.Spec.Template.Spec
	errs = append(errs, podChecks("Deployment "+upName, &upod, image)...)
	uargs := upod.Containers[0].Args
	if len(uargs) < 2 || uargs[0] != "up" || uargs[1] != name {
		bad("Deployment %s: args %q, want up %s ...", upName, uargs, name)
		return errs
	}
	if !slices.Contains(uargs, "--no-schedule") {
		bad("Deployment %s: no --no-schedule: shard 0 applies the faults", upName)
	}
	if v, _ := flagValue(uargs, "--state"); v != state || state == "" {
		bad("Deployment %s: --state %q, the shards' --up %q: want the same file", upName, v, state)
	}
	errs = append(errs, onResults("Deployment "+upName, &upod, 0, "--state", state)...)
	if v, _ := flagValue(uargs, "--logs"); v != upLogs || !hasUpLogs {
		bad("Deployment %s: --logs %q, Job %s's --up-logs %q: want the same folder", upName, v, mergeJob, upLogs)
	}
	errs = append(errs, onResults("Deployment "+upName, &upod, 0, "--logs", upLogs)...)
	errs = append(errs, mountedFile("Deployment "+upName, &upod, 0, uargs, "--file", configMap)...)
	if v, _ := flagValue(uargs, "--advertise"); v != svc.Name {
		bad("Deployment %s: --advertise %q, want its Service's name %q", upName, v, svc.Name)
	}
	for _, f := range []string{"--listen", "--control-listen"} {
		v, _ := flagValue(uargs, f)
		host, port, ok := strings.Cut(v, ":")
		if !ok || host != "0.0.0.0" || !servesPort(svc, &upod.Containers[0], port) {
			bad("Deployment %s: %s %q, want 0.0.0.0:PORT with PORT a container port its Service %s serves", upName, f, v, svc.Name)
		}
	}
	design, _ := flagValue(uargs, "--design")
	if sc, err := file.Scenario(name); err == nil {
		if _, err := sc.Select([]string{design}); err != nil {
			bad("Deployment %s: --design %q: %v", upName, design, err)
		}
	}
	if v, ok := flagValue(uargs, "--redis-url"); ok {
		rs := o.services[redisName]
		if rs == nil || o.deployments[redisName] == nil {
			bad("Deployment %s: --redis-url %q, and no Deployment and Service %s", upName, v, redisName)
		} else if want := fmt.Sprintf("redis://%s:%d", rs.Name, rs.Spec.Ports[0].Port); v != want {
			bad("Deployment %s: --redis-url %q, want %s, its Service", upName, v, want)
		}
	}
	return errs
}

func ptrString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// podChecks: one container, the image make image builds, not root.
func podChecks(what string, pod *corev1.PodSpec, image string) []error {
	var errs []error
	if len(pod.Containers) != 1 {
		return []error{fmt.Errorf("%s: %d containers, want 1", what, len(pod.Containers))}
	}
	c := pod.Containers[0]
	if c.Image != image {
		errs = append(errs, fmt.Errorf("%s: image %q, want %q, the one make image builds", what, c.Image, image))
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		errs = append(errs, fmt.Errorf("%s: securityContext.runAsNonRoot is not true", what))
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		errs = append(errs, fmt.Errorf("%s: want CPU and memory requests and a memory limit", what))
	}
	return errs
}

// mount is the mount path of the volume of pod whose source pick accepts,
// in container ci; "" when there is none.
func mount(pod *corev1.PodSpec, ci int, pick func(corev1.Volume) bool) string {
	for _, v := range pod.Volumes {
		if !pick(v) {
			continue
		}
		for _, m := range pod.Containers[ci].VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	return ""
}

// onResults checks that p lies on the results volume as pod mounts it.
func onResults(what string, pod *corev1.PodSpec, ci int, flag, p string) []error {
	at := mount(pod, ci, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claimName
	})
	if at == "" {
		return []error{fmt.Errorf("%s does not mount the results volume %s", what, claimName)}
	}
	if p == "" || !strings.HasPrefix(path.Clean(p)+"/", path.Clean(at)+"/") {
		return []error{fmt.Errorf("%s: %s %q is not on the results volume (mounted at %s)", what, flag, p, at)}
	}
	return nil
}

// mountedFile checks that the --file of args is scenarios.toml of the
// ConfigMap cm as pod mounts it.
func mountedFile(what string, pod *corev1.PodSpec, ci int, args []string, flag, cm string) []error {
	f, _ := flagValue(args, flag)
	at := mount(pod, ci, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == cm })
	if at == "" || f != path.Join(at, "scenarios.toml") {
		return []error{fmt.Errorf("%s: %s %q, want scenarios.toml in the ConfigMap %s's mount (%q)", what, flag, f, cm, at)}
	}
	return nil
}

// servesPort: the container listens on port and the Service sends there.
func servesPort(svc *corev1.Service, c *corev1.Container, port string) bool {
	for _, cp := range c.Ports {
		if fmt.Sprint(cp.ContainerPort) != port {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.TargetPort.String() == cp.Name || sp.TargetPort.String() == port {
				return true
			}
		}
	}
	return false
}

// loadScenarios loads a scenarios.toml with stormsim's own loader.
func loadScenarios(text string) (*scenario.File, error) {
	dir, err := os.MkdirTemp("", "stormsim-deploy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "scenarios.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return scenario.Load(p, nil)
}

// decodeBuilt decodes the output of build strictly.
func decodeBuilt(t *testing.T, what string, b []byte) *objects {
	t.Helper()
	o := newObjects()
	if err := o.decode(what, b); err != nil {
		t.Fatal(err)
	}
	return o
}

// Every manifest under k8s/ decodes strictly with the Kubernetes API types
// (and kustomize's, for the kustomizations), and both kustomizations build
// into a set whose fields agree: the self-contained run (stormsim up and
// Redis in the cluster) and own-target (the shards at your own service).
func TestManifests(t *testing.T) {
	t.Parallel()
	_, files, err := decodeTree("k8s")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Errorf("decoded %d files under k8s/: %v", len(files), files)
	}
	image := makeImage(t)
	for _, tc := range []struct {
		dir  string
		self bool
	}{
		{"k8s", true},
		{"k8s/own-target", false},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			b, err := build(tc.dir)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", tc.dir, err)
			}
			o := decodeBuilt(t, tc.dir, b)
			for _, err := range (run{self: tc.self}).check(o, image) {
				t.Error(err)
			}
			if n := bytes.Count(b, []byte(placeholder)); n != 1 {
				t.Errorf("the built manifests hold the placeholder %s %d times, want once (STORMSIM_START_AT)", placeholder, n)
			}
		})
	}
}

// The documented substitution, run as documented (sed on kustomize's
// output), gives every shard the same valid RFC 3339 STORMSIM_START_AT and
// leaves no placeholder; and docs/distributed.md and the kustomization
// document exactly that step.
func TestStartSubstitution(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"k8s", "k8s/own-target"} {
		b, err := build(dir)
		if err != nil {
			t.Fatal(err)
		}
		// As `date -u -d '+3 minutes' +%Y-%m-%dT%H:%M:%SZ` writes it.
		startAt := time.Date(2026, 12, 1, 5, 3, 0, 0, time.UTC).Format("2006-01-02T15:04:05Z")
		out := substitute(t, b, startAt)
		if bytes.Contains(out, []byte(placeholder)) {
			t.Errorf("%s: the placeholder survives the substitution", dir)
		}
		o := decodeBuilt(t, dir+" after sed", out)
		var got []string
		for _, e := range o.jobs[shardsJob].Spec.Template.Spec.Containers[0].Env {
			if e.Name == "STORMSIM_START_AT" {
				got = append(got, e.Value)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%s: STORMSIM_START_AT %q", dir, got)
		}
		// kustomize writes the placeholder unquoted, so the value after
		// sed is a plain YAML scalar: it must still decode as the string.
		at, err := time.Parse(time.RFC3339, got[0])
		if err != nil || got[0] != startAt || !at.Equal(time.Date(2026, 12, 1, 5, 3, 0, 0, time.UTC)) {
			t.Errorf("%s: STORMSIM_START_AT %q after the substitution: %v", dir, got[0], err)
		}
		if diff := cmp.Diff(strings.Replace(string(b), placeholder, startAt, 1), string(out)); diff != "" {
			t.Errorf("%s: sed changed more than the placeholder (-want +got):\n%s", dir, diff)
		}
	}
	for _, f := range []string{"../docs/distributed.md", "k8s/kustomization.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := "kubectl kustomize deploy/k8s | " + substitution + " | kubectl apply -f -"; !strings.Contains(string(b), want) {
			t.Errorf("%s does not document the substitution as %q", f, want)
		}
	}
}

// The ConfigMap's scenarios are the repository's: the same scenario_hash
// and the same thresholds for each of its scenarios.
func TestConfigMapScenarios(t *testing.T) {
	t.Parallel()
	o, _, err := decodeTree("k8s/base")
	if err != nil {
		t.Fatal(err)
	}
	file, err := loadScenarios(o.configMaps[configMap].Data["scenarios.toml"])
	if err != nil {
		t.Fatal(err)
	}
	repo, err := scenario.Load("../scenarios.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range file.Names() {
		got, _ := file.Scenario(name)
		want, err := repo.Scenario(name)
		if err != nil {
			t.Errorf("the ConfigMap's scenario %s: %v in ../scenarios.toml", name, err)
			continue
		}
		if g, w := scenario.Hash(got), scenario.Hash(want); g != w {
			t.Errorf("scenario %s: the ConfigMap's hash %s, scenarios.toml's %s: copy it again", name, g, w)
		}
		if diff := cmp.Diff(want.Expect, got.Expect); diff != "" {
			t.Errorf("scenario %s: thresholds (-scenarios.toml +ConfigMap):\n%s", name, diff)
		}
	}
}

// copyTree copies k8s/ into a temporary folder, with edit applied to one
// file (old must be there).
func copyTree(t *testing.T, file, old, repl string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("k8s", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("k8s", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == file {
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("%s has no %q to tamper with", rel, old)
			}
			b = bytes.Replace(b, []byte(old), []byte(repl), 1)
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// A tampered copy of the manifests fails: an unknown field fails the strict
// decoding, naming the file and the field; a field that no longer agrees
// fails the checks, naming it.
func TestTamperedManifests(t *testing.T) {
	t.Parallel()
	image := makeImage(t)
	decodeCases := []struct {
		file, old, repl, want string
	}{
		// a misspelt field of the Job's spec
		{"base/shards-job.yaml", "  completionMode: Indexed\n", "  completionMode: Indexed\n  completionMod: Indexed\n", `base/shards-job.yaml: document 0: Job "stormsim-shards": error unmarshaling JSON: while decoding JSON: json: unknown field "completionMod"`},
		// a field the container does not have
		{"base/merge-job.yaml", "          image: stormsim:dev\n", "          image: stormsim:dev\n          volumeMount: []\n", `base/merge-job.yaml: document 0: Job "stormsim-merge": error unmarshaling JSON: while decoding JSON: json: unknown field "volumeMount"`},
		// in the second document of a file
		{"components/up/stormsim-up.yaml", "      targetPort: control\n", "      targetPort: control\n      nodePorts: 30081\n", `components/up/stormsim-up.yaml: document 1: Service "stormsim-up"`},
		// a kustomization's misspelt key
		{"kustomization.yaml", "components:\n", "component:\n", `unknown field "component"`},
		// the same key twice
		{"base/results-pvc.yaml", "  accessModes:", "  storageClassName: a\n  storageClassName: b\n  accessModes:", `key "storageClassName" already set in map`},
	}
	for _, c := range decodeCases {
		dir := copyTree(t, c.file, c.old, c.repl)
		_, _, err := decodeTree(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s tampered (%q): error %v, want one containing %q", c.file, c.repl, err, c.want)
		}
	}
	checkCases := []struct {
		file, old, repl, want string
	}{
		// the merge expects another N
		{"base/merge-job.yaml", "            - --expect\n            - \"3\"", "            - --expect\n            - \"4\"", `--expect "4", want 3`},
		// completions and parallelism differ
		{"base/shards-job.yaml", "  completions: 3", "  completions: 4", "completions 4 and parallelism 3"},
		// the shards' --shards is not N
		{"base/shards-job.yaml", "            - --shards\n            - \"3\"", "            - --shards\n            - \"2\"", `--shards "2", want 3`},
		// a failed shard would be run again
		{"base/shards-job.yaml", "backoffLimitPerIndex: 0", "backoffLimitPerIndex: 1", "backoffLimitPerIndex 1, want 0"},
		// a pod restarted in place
		{"base/shards-job.yaml", "restartPolicy: Never", "restartPolicy: OnFailure", `restartPolicy "OnFailure", want Never`},
		// not an Indexed Job
		{"base/shards-job.yaml", "completionMode: Indexed", "completionMode: NonIndexed", "want Indexed"},
		// a volume one node at a time
		{"base/results-pvc.yaml", `["ReadWriteMany"]`, `["ReadWriteOnce"]`, "accessModes [ReadWriteOnce], want [ReadWriteMany]"},
		// the merge runs another image
		{"base/merge-job.yaml", "image: stormsim:dev", "image: stormsim:latest", `Job stormsim-merge: image "stormsim:latest", want "stormsim:dev"`},
		// up does not mount the results volume
		{"components/up/stormsim-up.yaml", "            - name: results\n              mountPath: /results\n", "", "Deployment stormsim-up does not mount the results volume"},
		// the start time already filled in: nothing for the documented step to replace
		{"base/shards-job.yaml", `value: "__START_AT__"`, `value: "2026-12-01T05:00:00Z"`, "want the placeholder __START_AT__"},
		// up names a host the shards cannot reach
		{"components/up/stormsim-up.yaml", "- stormsim-up\n            - --state", "- localhost\n            - --state", `--advertise "localhost", want its Service's name "stormsim-up"`},
		// a scenario the ConfigMap does not hold
		{"base/shards-job.yaml", "            - live-smoke\n", "            - live-smokey\n", `runs scenario "live-smokey", which ConfigMap stormsim-scenarios's scenarios.toml does not hold`},
		// a ConfigMap stormsim refuses
		{"base/scenarios-configmap.yaml", "clients = 200", "clients = -200", "ConfigMap stormsim-scenarios: scenarios.toml:"},
		// up writes its state elsewhere than the shards read it
		{"components/up/stormsim-up.yaml", "/results/up/state.json", "/results/up/up.json", `--state "/results/up/up.json", the shards' --up "/results/up/state.json"`},
		// not run as non-root
		{"base/merge-job.yaml", "runAsNonRoot: true", "runAsNonRoot: false", "Job stormsim-merge: securityContext.runAsNonRoot is not true"},
		// a Redis URL no Service serves
		{"components/up/stormsim-up.yaml", "redis://stormsim-redis:6379", "redis://redis:6379", `--redis-url "redis://redis:6379", want redis://stormsim-redis:6379`},
	}
	for _, c := range checkCases {
		dir := copyTree(t, c.file, c.old, c.repl)
		b, err := build(dir)
		if err != nil {
			t.Errorf("%s tampered (%q): kustomize build: %v", c.file, c.repl, err)
			continue
		}
		errs := (run{self: true}).check(decodeBuilt(t, c.file, b), image)
		if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), c.want) }) {
			t.Errorf("%s tampered (%q): checks gave %v, want one containing %q", c.file, c.repl, errs, c.want)
		}
	}
}
