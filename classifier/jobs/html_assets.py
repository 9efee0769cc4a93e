"""The CSS and JavaScript inlined into the triage report (classifier.jobs.html).

Plain ES5-level JavaScript with no library: the page must open offline in any browser.
"""

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em 2em;color:#1d2129;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .5em}h4{margin:.8em 0 .2em;font-size:1em}
table{border-collapse:collapse;width:100%}#jobs{table-layout:fixed}
#jobs th:nth-child(1){width:17%}#jobs th:nth-child(2){width:11%}#jobs th:nth-child(3){width:5%}
#jobs th:nth-child(4){width:7%}#jobs th:nth-child(5){width:16%}#jobs th:nth-child(6){width:7%}
td.ev .where{display:block}
td{overflow-wrap:anywhere}th,td{text-align:left;vertical-align:top;padding:4px 8px;border-bottom:1px solid #e3e6ea}
th{background:#f4f6f8;position:sticky;top:0}th[data-key]{cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.jobpath,.group,code,.where{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.group{color:#444}.where{color:#666}
code{white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere}
#toc{display:flex;flex-wrap:wrap;gap:.4em 1.2em;margin:.6em 0;font-size:15px}
#toc a,a.top{color:#2f6fb3}a.top{font-size:12px;font-weight:normal;margin-left:.6em}
#legend{display:inline-flex;flex-wrap:wrap;gap:.2em 1em;list-style:none;margin:0;padding:0}
#legend li{white-space:nowrap}.legend-line{color:#444}#grouping{color:#444}
ol.steps code{background:#f4f6f8;padding:0 3px;border-radius:3px}
a.cat{text-decoration:none}
/* A phone: each job becomes a card; the headers stay as sort buttons. */
@media (max-width:700px){
body{margin:1em .8em}#chart .label{flex-basis:9.5em}
#jobs,#jobs thead,#jobs tbody.job,#jobs tr,#jobs td{display:block;width:auto}
#jobs thead tr{display:flex;flex-wrap:wrap;gap:4px}#jobs thead th:not([data-key]){display:none}
#jobs thead th{position:static;width:auto!important;border:1px solid #d5d9de;border-radius:3px;padding:2px 6px;font-size:12px}
#jobs tbody.job{border:1px solid #d5d9de;border-radius:4px;margin:8px 0;padding:4px 0}
#jobs tbody.job[hidden]{display:none}#jobs td{border:0;padding:2px 8px}#jobs td:empty{display:none}#jobs td.num{text-align:left}
#jobs td[data-label]::before{content:attr(data-label) ": ";color:#666;font-size:12px;font-family:system-ui,sans-serif}
#groups td{padding:3px 4px}#groups th:nth-child(5),#groups td.jobpath{display:none}
}
.cat{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;background:var(--c,#888);font-size:12px;white-space:nowrap}
tr.more td{border-bottom:2px solid #d5d9de;padding-top:0}details summary{cursor:pointer;color:#2f6fb3;font-size:12px}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.timeline text{font:12px system-ui,sans-serif;fill:#1d2129}
#chart{max-width:720px}#chart .bar{display:flex;align-items:center;gap:8px;color:inherit;text-decoration:none;font-size:12px;line-height:22px}
#chart .label{flex:0 0 11.5em;text-align:right;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
#chart .track{flex:1 1 auto;min-width:2em}#chart .fill{display:block;height:16px;border-radius:3px}
#chart .n{flex:0 0 2.5em;font-variant-numeric:tabular-nums}#chart .bar:hover .fill{opacity:.8}.timeline .axis{fill:#666;font-size:11px}
.timeline .lane{stroke:#e3e6ea}.tl{overflow-x:auto;margin:.5em 0}
#js-errors{background:#fee;color:#900;padding:.5em}.error{color:#c0392b}
tbody.job[hidden]{display:none}details>summary>h2{display:inline;color:#1d2129;font-size:1.15em}
"""

# Runs first: any later error is written into the page, where a test (or a user) sees it.
ERROR_TRAP = """
window.onerror=function(msg,src,line){var p=document.getElementById('js-errors');
p.hidden=false;p.textContent+='JS error: '+msg+' ('+src+':'+line+')\\n';
document.documentElement.setAttribute('data-js-errors','1');};
"""

SCRIPT = """
(function(){
  var table=document.getElementById('jobs');
  var keys=JSON.parse(document.getElementById('data').textContent).sort_keys;
  var numeric={confidence:1,ranks:1,index:1};
  var heads=table.tHead.querySelectorAll('th[data-key]');
  var filterBox=document.getElementById('filter');
  var shown=document.getElementById('shown');
  // State: `?k=v&...` then `#k=v&...`, the hash winning; `category=X` is `filter=cat:X`.
  function parse(text){
    var out={},pairs=text.split('&');
    for(var i=0;i<pairs.length;i++){var kv=pairs[i].split('=');
      if(kv[0])out[decodeURIComponent(kv[0])]=decodeURIComponent(kv.slice(1).join('=').replace(/\\+/g,' '));}
    if(out.category){out.filter='cat:'+out.category;delete out.category;}
    return out;
  }
  function params(){
    var out=parse(location.search.replace(/^\\?/,'')),hash=parse(location.hash.replace(/^#/,''));
    for(var k in hash)out[k]=hash[k];
    return out;
  }
  // `#sec-jobs`, `#top`: a link to a part of the page, not a state; the browser scrolls there.
  function isAnchor(){var h=location.hash.replace(/^#/,'');
    return h&&h.indexOf('=')<0&&document.getElementById(decodeURIComponent(h));}
  function compare(key,dir){
    return function(a,b){
      var x=a.getAttribute('data-'+key),y=b.getAttribute('data-'+key),c;
      if(numeric[key]){c=parseFloat(x)-parseFloat(y);}else{c=x<y?-1:(x>y?1:0);}
      if(dir==='desc')c=-c;
      return c||(parseFloat(a.getAttribute('data-index'))-parseFloat(b.getAttribute('data-index')));
    };
  }
  function sortBy(key,dir){
    if(keys.indexOf(key)<0)key='index';
    var bodies=Array.prototype.slice.call(table.tBodies);
    bodies.sort(compare(key,dir));
    for(var i=0;i<bodies.length;i++)table.appendChild(bodies[i]);
    for(var j=0;j<heads.length;j++){var k=heads[j].getAttribute('data-key');
      heads[j].setAttribute('aria-sort',k===key?(dir==='desc'?'descending':'ascending'):'none');}
    table.setAttribute('data-sorted',key+':'+dir);
  }
  function filterBy(text){
    text=(text||'').toLowerCase();filterBox.value=text;var n=0,bodies=table.tBodies;
    for(var i=0;i<bodies.length;i++){var b=bodies[i],ok;
      if(text.indexOf('cat:')===0)ok=b.getAttribute('data-category')===text.slice(4);
      else ok=!text||b.textContent.toLowerCase().indexOf(text)>=0;
      b.hidden=!ok;if(ok)n++;}
    shown.textContent=n+' of '+bodies.length+' jobs shown';
  }
  function openAll(on){var d=table.querySelectorAll('details');for(var i=0;i<d.length;i++)d[i].open=on;}
  function showFiltered(){
    // A filtered link lands on its result: the jobs table, and a lone job opened.
    var visible=[],bodies=table.tBodies;
    for(var i=0;i<bodies.length;i++)if(!bodies[i].hidden)visible.push(bodies[i]);
    if(visible.length===1)visible[0].querySelector('details').open=true;
    document.getElementById('sec-jobs').scrollIntoView();
    document.documentElement.setAttribute('data-scrolled',String(Math.round(window.pageYOffset)));
  }
  function apply(initial){
    if(isAnchor()){if(location.hash==='#sec-groups')document.getElementById('groups-box').open=true;
      if(!initial)return;}
    var p=params();sortBy(p.sort||'index',p.dir==='desc'?'desc':'asc');filterBy(p.filter);
    if(p.open)openAll(p.open==='all');
    if(p.filter)showFiltered();
    // #click=KEY[,KEY...] clicks column headers in turn: how tests drive the real handlers.
    var clicks=p.click?p.click.split(','):[];
    for(var i=0;i<clicks.length;i++){var th=table.tHead.querySelector('th[data-key="'+clicks[i]+'"]');if(th)th.click();}}
  // Record the state in the URL (shareable) without a reload or a second hashchange.
  function setHash(changes){
    var p=params(),parts=[];for(var k in changes)p[k]=changes[k];delete p.click;
    for(var k2 in p)if(p[k2])parts.push(encodeURIComponent(k2)+'='+encodeURIComponent(p[k2]));
    try{history.replaceState(null,'','#'+parts.join('&'));}catch(e){/* some file: URLs refuse */}
  }
  function onHead(th){
    var key=th.getAttribute('data-key');
    var dir=table.getAttribute('data-sorted')===key+':asc'?'desc':'asc';
    sortBy(key,dir);setHash({sort:key,dir:dir});
  }
  for(var i=0;i<heads.length;i++){
    heads[i].addEventListener('click',function(){onHead(this);});
    heads[i].addEventListener('keydown',function(ev){if(ev.key==='Enter')onHead(this);});
  }
  filterBox.addEventListener('input',function(){filterBy(filterBox.value);setHash({filter:filterBox.value});});
  window.addEventListener('hashchange',function(){apply(false);});
  apply(true);
  document.documentElement.setAttribute('data-ready','1');
})();
"""
