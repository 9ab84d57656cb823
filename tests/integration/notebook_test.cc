// Issue 26, point 6: notebook habits, through the built binary over stdio:
// top-level await, `_`, `!cmd`, `%timeit`/`%time`, `%pip` and other magics,
// display(HTML/Markdown), and output a session's thread prints between calls.
#include <gtest/gtest.h>

#include <string>

#include "server_process.h"

namespace mcpexec::testing {
namespace {

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class NotebookTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    server_->Initialize();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess& s() { return *server_; }
  static ServerProcess* server_;
};
ServerProcess* NotebookTest::server_ = nullptr;

TEST_F(NotebookTest, TopLevelAwaitRuns) {
  json r = s().Exec(
      "import asyncio\nasync def f(x):\n    await asyncio.sleep(0.01)\n    return x * 2\n"
      "a = await f(20)\nprint(a)\nawait f(21)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "40\n");
  EXPECT_EQ(r["result"], "42");
}

TEST_F(NotebookTest, UnderscoreIsTheLastResultInASession) {
  json first = s().Exec("6 * 7", {{"session", "u"}});
  EXPECT_EQ(first["result"], "42") << first.dump();
  json next = s().Exec("print(_ + 1)", {{"session", "u"}});
  EXPECT_EQ(next["stdout"], "43\n") << next.dump();
}

TEST_F(NotebookTest, BangRunsAShellCommandWithItsOutput) {
  json r = s().Exec("print('before', flush=True)\n!echo from-the-shell\nprint('after')");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "before\nfrom-the-shell\nafter\n") << r.dump();
  r = s().Exec("for i in range(2):\n    !echo line\n");
  EXPECT_EQ(r["stdout"], "line\nline\n") << r.dump();
  // Plain Python that merely looks alike keeps its meaning.
  r = s().Exec("x = (7\n% 4)\nprint(x)");
  EXPECT_EQ(r["stdout"], "3\n") << r.dump();
}

// Issue 36, point 14: the notebook rewrite changed `!` and `%` lines inside
// triple-quoted strings and brackets; it reads only lines that start a
// statement now.
TEST_F(NotebookTest, LinesInsideStringsAndBracketsAreNeverRewritten) {
  json r = s().Exec(
      "template = \"\"\"\n!not a command\n%d of %s\n\"\"\"\n"
      "!echo shell\n"
      "x = (7\n% 4)\n"
      "print(repr(template), x)");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "shell\n'\\n!not a command\\n%d of %s\\n' 3\n") << r.dump();
}

TEST_F(NotebookTest, TimeitAndTimeTime) {
  json r = s().Exec("%timeit sum(range(100))");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "per loop (mean")) << r.dump();
  r = s().Exec("%time sum(range(10))");
  EXPECT_TRUE(Has(r["stdout"], "wall time")) << r.dump();
  EXPECT_EQ(r["result"], "45") << r.dump();
}

// Issue 37, point 6: !cmd takes Python's values as IPython fills them, and
// name = !cmd captures the output's lines.
TEST_F(NotebookTest, ShellLinesTakePythonValuesAndCaptureTheirOutput) {
  json r = s().Exec(
      "import os\npath = 'in'\nos.mkdir(path)\nopen('in/a.txt', 'w').write('x')\n"
      "!ls {path}\nname = 'world'\n!echo hello $name 'cost $$5'\n"
      "files = !ls {path}\nprint(files, files.n, len(files))\n"
      "!echo {len(files) + 1} $HOME\n");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  const std::string out = r["stdout"];
  EXPECT_EQ(out.rfind("a.txt\nhello world cost $5\n['a.txt'] a.txt 1\n2 /", 0), 0u) << out;
}

// Issue 37, point 6: %%time and %%timeit on a cell's first line time the
// whole cell; its line numbers stay the cell's.
TEST_F(NotebookTest, CellMagicsTimeTheWholeCell) {
  json r = s().Exec("%%time\nx = sum(range(10))\nx");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "wall time")) << r.dump();
  EXPECT_EQ(r["result"], "45") << r.dump();
  r = s().Exec("%%timeit -n 2 -r 3\ny = [i for i in range(10)]");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "per loop (mean")) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "of 3 runs, 2 loops each")) << r.dump();
  r = s().Exec("%%time\nraise ValueError('in the cell')", {{"session", "magic"}});
  EXPECT_EQ(r["exit_code"], 1) << r.dump();
  EXPECT_TRUE(Has(r["stderr"], "line 2")) << r.dump();
  EXPECT_TRUE(Has(r["stdout"], "wall time")) << "timed even when it raised: " << r.dump();
}

TEST_F(NotebookTest, InstallingSaysWhyNotAndWhatIsThere) {
  for (const char* code : {"%pip install seaborn", "!pip install seaborn"}) {
    json r = s().Exec(code);
    EXPECT_EQ(r["exit_code"], 1) << code << ": " << r.dump();
    const std::string err = r["stderr"];
    EXPECT_TRUE(Has(err, "nothing can be installed at run time")) << err;
    EXPECT_TRUE(Has(err, "numpy ")) << err;
    EXPECT_TRUE(Has(err, "wheels/")) << err;
    EXPECT_TRUE(Has(err, "MCP_EXEC_PYTHON")) << err;
  }
}

TEST_F(NotebookTest, AnotherMagicIsAClearError) {
  json r = s().Exec("%load_ext autoreload");
  EXPECT_EQ(r["exit_code"], 1) << r.dump();
  const std::string err = r["stderr"];
  EXPECT_TRUE(Has(err, "%load_ext is not supported")) << err;
  EXPECT_TRUE(Has(err, "%timeit")) << err;
  r = s().Exec("%matplotlib inline\nprint('ok')");
  EXPECT_EQ(r["stdout"], "ok\n") << r.dump();
}

TEST_F(NotebookTest, DisplayOfHtmlAndMarkdownShowsTheirText) {
  json r = s().Exec(
      "from IPython.display import HTML, Markdown, display\n"
      "display(HTML('<b>bold</b>'))\ndisplay(Markdown('# Title'))\nMarkdown('*last*')");
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  EXPECT_EQ(r["stdout"], "<b>bold</b>\n# Title\n") << r.dump();
  EXPECT_EQ(r["result"], "*last*") << r.dump();
  // Libraries that look for a notebook see none.
  r = s().Exec("import IPython\nprint(IPython.get_ipython())");
  EXPECT_EQ(r["stdout"], "None\n") << r.dump();
  // A DataFrame keeps its text table.
  r = s().Exec("import pandas as pd\ndisplay(pd.DataFrame({'a': [1]}))");
  EXPECT_EQ(r["stdout"], "   a\n0  1\n") << r.dump();
}

TEST_F(NotebookTest, OutputBetweenSessionCallsComesWithTheNextCall) {
  json r = s().Exec(
      "import threading, time, sys\n"
      "def later():\n    time.sleep(0.5)\n    print('from the thread', flush=True)\n"
      "    print('thread err', file=sys.stderr, flush=True)\n"
      "threading.Thread(target=later).start()\nprint('cell one')",
      {{"session", "bg"}});
  EXPECT_EQ(r["stdout"], "cell one\n") << r.dump();
  sleep(2);
  r = s().Exec("print('cell two')", {{"session", "bg"}});
  EXPECT_EQ(r["stdout"], "from the thread\ncell two\n") << r.dump();
  EXPECT_EQ(r["stderr"], "thread err\n") << r.dump();
}

}  // namespace
}  // namespace mcpexec::testing
