# escape: keep calling tools past the run's timeout (a loop of nested calls) so that a call in flight holds the run or its slot
# expect: timed_out
# timeout: 2
# upstreams: yes
# posture: root container
# skip-why: without Landlock the docker posture refuses a stdio upstream (its runs could read the upstream's /proc/<pid>/environ)
import mcp_tools

n = 0
while True:
    try:
        mcp_tools.everything.echo(message=str(n))
    except mcp_tools.ToolError:
        pass
    n += 1
