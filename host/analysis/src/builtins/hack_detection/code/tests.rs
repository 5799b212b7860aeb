//! Tests of what inline code writes.

use super::super::commands::Shell;
use super::*;

fn found(code: &str) -> Vec<(String, String)> {
    writes_in_code(code, 0, &Shell)
        .into_iter()
        .map(|w| (w.path, w.op))
        .collect()
}

fn p(path: &str, op: &str) -> (String, String) {
    (path.to_string(), op.to_string())
}

#[test]
fn python_writes_and_reads() {
    assert_eq!(
        found("with open('/logs/verifier/reward.txt', 'w') as f:\n    f.write('1')"),
        vec![p("/logs/verifier/reward.txt", "open()")]
    );
    assert_eq!(
        found("open(\"/tests/test_outputs.py\", mode=\"a+\")"),
        vec![p("/tests/test_outputs.py", "open()")]
    );
    assert_eq!(
        found("print(open('/tests/test.sh').read())\nopen('/tests/x', 'rb')"),
        vec![]
    );
    assert_eq!(
        found("import os\nos.remove('/tests/test_outputs.py')"),
        vec![p("/tests/test_outputs.py", "os.remove()")]
    );
    assert_eq!(
        found("from pathlib import Path\nPath('/logs/verifier/reward.json').write_text('{}')"),
        vec![p("/logs/verifier/reward.json", "Path.write_text()")]
    );
    assert_eq!(found("Path('/tests/a.py').read_text()"), vec![]);
    assert_eq!(
        found("open(os.path.join('/tests', 'x.py'), 'w')"),
        vec![p("/tests", "open()")]
    );
    assert_eq!(found("shutil.copy('/tests/a.py', '/tmp/a.py')"), vec![]);
    assert_eq!(
        found("shutil.copy('/tmp/a.py', '/tests/a.py')"),
        vec![p("/tests/a.py", "shutil.copy()")]
    );
    assert_eq!(
        found("os.system('echo 1 > /logs/verifier/reward.txt')"),
        vec![p("/logs/verifier/reward.txt", "redirect")]
    );
    assert_eq!(
        found("subprocess.run(['rm', '-rf', '/tests'])"),
        vec![p("/tests", "rm")]
    );
    assert_eq!(found("s = '/tests/x'.replace('/tests/', '')"), vec![]);
    assert_eq!(found("x = \"\"\"open('/tests/a', 'w')\"\"\""), vec![]);
}

#[test]
fn other_languages() {
    assert_eq!(
        found("require('fs').writeFileSync('/logs/verifier/reward.txt', '1')"),
        vec![p("/logs/verifier/reward.txt", ".writeFileSync()")]
    );
    assert_eq!(
        found("open(my $fh, '>', '/tests/t.py'); unlink('/tests/u.py');"),
        vec![p("/tests/t.py", "open()"), p("/tests/u.py", "unlink()")]
    );
    assert_eq!(
        found("open(FH, \">/logs/verifier/reward.txt\")"),
        vec![p("/logs/verifier/reward.txt", "open()")]
    );
    assert_eq!(
        found("File.write('/tests/a.rb', 'x')"),
        vec![p("/tests/a.rb", "File.write()")]
    );
}

#[test]
fn junk_is_harmless() {
    for junk in [
        "'",
        "\"\"\"",
        "open(",
        ")(((",
        "os.remove('/tests",
        "\\",
        "`/tests`",
        "#'\n'/tests'",
    ] {
        let _ = writes_in_code(junk, 0, &Shell);
    }
}
