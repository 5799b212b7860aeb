#!/usr/bin/env python3
"""Regenerates fixtures/*.json (run from this directory). Needs the real Claude Code run at
/tmp/acp/results/claude-test_harbor_claude_code/20261201_193035 (its run_info, metrics, params,
progress, summary, run.log and fizzbuzz result.json are copied; the rest is synthetic, with XSS
payloads in a task id, a question, observations, issues and an artifact name)."""
import json, copy, glob, os
R='/tmp/acp/results/claude-test_harbor_claude_code/20261201_193035'
out='fixtures'
X1="<script>document.title='pwned'</script>"
X2="<img src=x onerror=\"document.title='pwned'\">"
def load(p): return json.load(open(p))
ri=load(R+'/run_info.json'); metrics=load(R+'/metrics.json'); params=load(R+'/params.json')
prog=load(R+'/progress.json'); summ=open(R+'/summary.md').read()
log=open(R+'/run.log').read().splitlines()[-200:]
def rs(path, ns, rid, status, st, fin, dur, total, fin_n, comp, failed, err, running, val, model='claude-test'):
    return {"path":path,"namespace":ns,"run_id":rid,"benchmark":"harbor","harness":"claude_code","model":model,
      "environment":"sandbox","status":status,"started_at":st,"finished_at":fin,"duration_seconds":dur,
      "total_tasks":total,"finished_tasks":fin_n,"completed_tasks":comp,"failed_tasks":failed,"error_tasks":err,
      "running_tasks":running,"headline":None if val is None else {"series_id":"reward.native@1","metric_id":"reward","value":val}}
A=rs("claude-test_harbor_claude_code/20261201_193035","claude-test_harbor_claude_code","20261201_193035","completed","2026-12-01T19:30:35Z","2026-12-01T19:30:39Z",3.95,60,60,55,3,2,0,0.8833)
B=rs("claude-test_harbor_claude_code/20261201_181200","claude-test_harbor_claude_code","20261201_181200","completed","2026-12-01T18:12:00Z","2026-12-01T18:20:41Z",521.3,60,60,52,5,3,0,0.8167)
C=rs("gpt-x_harbor_terminus/20261201_200000","gpt-x_harbor_terminus","20261201_200000","running","2026-12-01T20:00:00Z",None,None,60,21,19,1,1,4,None,model='gpt-x')
D=rs("nested/team-a/qwen_harbor_mini/20261130_090000","nested/team-a/qwen_harbor_mini","20261130_090000","failed","2026-11-30T09:00:00Z","2026-11-30T09:03:10Z",190.0,10,10,4,0,6,0,0.3)
json.dump({"root":"/tmp/acp/results","runs":[C,A,B,D]},open(out+'/runs.json','w'),indent=1)
issues=[{"code":"agent_timeout","severity":"error","count":2},{"code":"eval_failed","severity":"fatal","count":1},{"code":"artifact_missing","severity":"warning","count":3}]
m=copy.deepcopy(metrics); m['series'][0]['value']=0.8833; m['series'][0]['categories']={"files":0.9,"shell":0.85,"web":0.9}
m['series'][1]['value']=0.8833; m['series'][1]['categories']={"files":0.9,"shell":0.85,"web":0.9}
for s in m['series']: s['counts']={"error":2,"evaluated":58,"invalidated":0,"total":60,"unavailable":0}
json.dump({"run":A,"run_info":ri,"metrics":m,"params":params,"summary_md":summ,"progress":prog,"issues":issues,"log_tail":"\n".join(log+[X1])},open(out+'/run.json','w'),indent=1)
pr=copy.deepcopy(prog); pr.update(status="running",total_tasks=60,running_tasks=4,finished_tasks=21,completed_tasks=19,failed_tasks=1,error_tasks=1,pending_tasks=35,
  current_phase_counts={"run":3,"evaluate":1},active_tasks={"t-061":{"phase":"run","attempt":1},"t-062":{"phase":"run","attempt":1},"t-063":{"phase":"run","attempt":2},"t-064":{"phase":"evaluate","attempt":1}})
json.dump({"run":C,"run_info":ri,"metrics":None,"params":params,"summary_md":None,"progress":pr,"issues":[],"log_tail":"\n".join(log[-20:])},open(out+'/run-running.json','w'),indent=1)
cats=["files","shell","web"]
tasks=[]
for i in range(60):
    tid="fizzbuzz" if i==0 else ("hello-file" if i==1 else ("primes" if i==2 else "task-%03d"%i))
    if i==3: tid="xss-"+X1+X2
    state="normal"; status="completed"; correct= (i%7!=5); reward=1.0 if correct else 0.0; iss=[]
    if i in (10,20): state="error"; status="run_error"; correct=None; reward=None; iss=["agent_timeout"]
    if i==30: state="fatal"; status="eval_error"; correct=None; reward=None; iss=["eval_failed"]
    if i%11==4: iss=iss+["artifact_missing"]
    tasks.append({"task_id":tid,"ref":state+"/"+tid.replace('/','_')+"--%064x"%(i*7919+1),"state":state,"status":status,"category":cats[i%3],
      "correct":correct,"reward":reward,"issues":iss,"attempts":2 if i==3 else 1,"duration_seconds":round(3+i*1.7,2)})
tasks[3]['ref']="normal/xss--"+"ab"*32
for i in range(4): tasks.insert(0,{"task_id":"t-%03d"%(61+i),"ref":"running/t-%03d--%064x"%(61+i,i),"state":"running","status":"running","category":cats[i%3],"correct":None,"reward":None,"issues":[],"attempts":1,"duration_seconds":None})
json.dump({"total":len(tasks),"page":0,"size":50,"categories":cats,"issue_codes":["agent_timeout","artifact_missing","eval_failed"],"tasks":tasks},open(out+'/tasks.json','w'),indent=1)
# task: real fizzbuzz
fz=glob.glob(R+'/details/normal/fizzbuzz*')[0]
res=load(fz+'/attempt-1/result.json')
json.dump({"task":load(fz+'/task.json'),"attempts":[{"name":"attempt-1","result":res,"manifest":None,"retries":[]}]},open(out+'/task-real.json','w'),indent=1)
# task: synthetic xss with 2 attempts, retries, manifest, system prompt, reasoning, exit codes
r2=copy.deepcopy(res); r2['task_id']="xss-"+X1+X2; r2['category']='web'
st=r2['trajectory']['steps']
st[0]['system_prompt']="You are a careful agent. "+X1
st[0]['user_content']="Question: "+X1+" and "+X2+"\n"+st[0]['user_content']
st[0]['assistant_content']['reasoning_content']="I should write the file with awk. "+X2
st[0]['metric'].update(llm_infer_ms=812.4,env_action_ms=35.0,stop_reason="tool_use")
st[1]['observation']=[{"tool_call_id":"call_6","exit_code":0,"stdout":"15 /app/fizzbuzz.txt\n"+X1,"stderr":X2,"is_error":False}]
st.insert(2,{"step_id":3,"system_prompt":None,"user_content":None,"tools":None,"assistant_content":{"content":"Let me check a missing file.","reasoning_content":None,"tool_calls":[{"id":"call_7","name":"Bash","arguments":{"command":"cat /app/missing.txt"}}]},
  "observation":[{"tool_call_id":"call_7","exit_code":1,"output":"cat: /app/missing.txt: No such file or directory "+X2,"is_error":True}],"metric":{"prompt_tokens_len":220,"completion_tokens_len":14,"llm_infer_ms":640.0,"env_action_ms":12.5,"stop_reason":"tool_use"},"started_at":"2026-12-01T19:30:37.100Z","finished_at":"2026-12-01T19:30:37.800Z"})
st[3]['step_id']=4
r2['issues']=[{"severity":"warning","phase":"collect","code":"artifact_missing","message":"declared artifact /app/out.log was not found "+X1}]
r2['metrics']={"correct":False,"reward":0.0}
r2['final_answer']="done "+X2
man={"schema_version":1,"complete":False,"total_bytes":1234,"entries":[
 {"source":"/app/fizzbuzz.txt","destination":"fizzbuzz.txt","kind":"file","status":"collected","bytes":73,"entries":1,"sha256":"9f2c"+"0"*60,"mode":"0644","excluded":0,"files":[],"dirs":[],"links":[]},
 {"source":"/app/logs","destination":"logs","kind":"directory","status":"collected","bytes":1161,"entries":2,"sha256":"1a2b"+"f"*60,"excluded":1,"files":[{"path":"a.log","bytes":1000,"sha256":"aa"*32,"mode":"0644"},{"path":X1+".log","bytes":161,"sha256":"bb"*32,"mode":"0644"}],"dirs":[],"links":[]},
 {"source":"/app/out.log","destination":"out.log","kind":None,"status":"missing","bytes":0,"entries":0,"sha256":None,"excluded":0,"files":[],"dirs":[],"links":[]}]}
r1=copy.deepcopy(res); r1['task_id']=r2['task_id']; r1['status']='run_error'; r1['metrics']={}; r1['issues']=[{"severity":"error","phase":"run","code":"agent_timeout","message":"agent exceeded 600s"}]; r1['trajectory']['steps']=r1['trajectory']['steps'][:1]
retry={"schema_version":1,"archived_to":"retries/retry1","task_id":r2['task_id'],"category":"web","attempt":2,"issues":[{"severity":"error","phase":"run","code":"model_http_error","message":"HTTP 529 overloaded "+X2}],"discarded_result":{"status":"run_error"},"retry":1,"max_retries":2,"retry_delay_seconds":5.0,"stage":"run","scope":"attempt","matched_pattern":"overloaded"}
task={"attempt_plan":{"k":2,"strategy":"avg"},"attempts":{"1":"attempt-1","2":"attempt-2"},"category":"web","retry_count":1,"retry_counts":{"1":0,"2":1},"schema_version":"agentcompass.task.v3","task_id":r2['task_id']}
json.dump({"task":task,"attempts":[{"name":"attempt-1","result":r1,"manifest":None,"retries":[]},{"name":"attempt-2","result":r2,"manifest":man,"retries":[retry]}]},open(out+'/task.json','w'),indent=1)
# compare
ct=[]; ch=["fixed","broken","both_right","both_wrong","only_a","only_b"]
for i,t in enumerate(tasks[4:]):
    c=ch[0] if i%13==1 else ch[1] if i%17==2 else ch[3] if i%9==5 else ch[4] if i==58 else ch[2]
    a={"fixed":False,"broken":True,"both_right":True,"both_wrong":False,"only_a":True}[c]; b={"fixed":True,"broken":False,"both_right":True,"both_wrong":False,"only_a":None}[c]
    ct.append({"task_id":t['task_id'],"a":a,"b":b,"change":c})
ct.append({"task_id":"new-task","a":None,"b":True,"change":"only_b"})
counts={k:sum(1 for t in ct if t['change']==k) for k in ch}
json.dump({"a":B,"b":A,"counts":counts,"categories":[{"category":"files","a":0.8,"b":0.9,"delta":0.1},{"category":"shell","a":0.9,"b":0.85,"delta":-0.05},{"category":"web","a":0.75,"b":0.9,"delta":0.15}],"total":len(ct),"tasks":ct},open(out+'/compare.json','w'),indent=1)
json.dump({"task":{"task_id":"t-061","category":"files","attempts":{"1":"attempt-1"},"attempt_plan":{"k":1,"strategy":"avg"},"retry_count":0,"schema_version":"agentcompass.task.v3"},"attempts":[{"name":"attempt-1","result":None,"manifest":None,"retries":[]}]},open(out+'/task-running.json','w'),indent=1)
